"""Opening a pull request from its target: OWNER/NAME by GitHub's own rules, or a usage error."""

from __future__ import annotations

import secrets

import pytest

from reviewbot.errors import UsageError
from reviewbot.forges.base import ForgeSettings, Target
from reviewbot.forges.github.connect import open_target

SETTINGS = ForgeSettings("https://api.github.com", "ghp_" + secrets.token_hex(18), True, 5, 0)


@pytest.mark.parametrize("repo", ["../etc", "o/..", "-o/r", "o/r/x", "o", "o/r?x=1"])
def test_a_repository_not_named_as_github_names_them_is_refused(repo: str) -> None:
    with pytest.raises(UsageError, match="OWNER/NAME"):
        open_target(Target("github", repo, 1), SETTINGS)


def test_a_well_formed_repository_opens() -> None:
    assert open_target(Target("github", "octo-org/my.repo_1", 1), SETTINGS).name == "github"
