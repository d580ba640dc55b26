"""The forge registry: lookup, the ref each forge's text uses, and its opener."""

from __future__ import annotations

import secrets

import pytest

from reviewbot.config import Settings
from reviewbot.errors import UsageError
from reviewbot.forges import registry
from reviewbot.forges.base import Target


def test_each_forge_is_found_by_name_and_an_unknown_one_is_a_usage_error() -> None:
    assert [k.name for k in registry.kinds()][:2] == ["gitlab", "github"]
    assert registry.ref(Target("gitlab", "g/p", 12)) == "!12"
    assert registry.ref(Target("github", "o/r", 12)) == "#12"
    with pytest.raises(UsageError, match="unknown forge 'gitea'"):
        registry.kind("gitea")


def test_the_opener_gets_the_forges_own_settings_and_checks_its_target() -> None:
    forge = registry.kind("github").open(Target("github", "o/r", 3, "https://ghe.example/api/v3"),
                                         Settings(github_token=secrets.token_hex(20)))
    assert forge.name == "github"
    with pytest.raises(UsageError, match="OWNER/NAME"):
        registry.kind("github").open(Target("github", "../etc", 3), Settings())
