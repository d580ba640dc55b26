"""Opening a merge request from its target: the job's forge URL wins over the settings'."""

from __future__ import annotations

import secrets

from reviewbot.forges.base import ForgeSettings, Target
from reviewbot.forges.gitlab.connect import open_target

SETTINGS = ForgeSettings("https://gitlab.example.com", "glpat-" + secrets.token_hex(10), True, 5, 0)


def test_the_targets_url_and_numbers_are_what_the_forge_talks_to() -> None:
    forge = open_target(Target("gitlab", "grp/app", 7, "https://gitlab.other.example"), SETTINGS)
    assert (forge.gl.url, forge.project_id, forge.iid) == (
        "https://gitlab.other.example", "grp/app", 7)
    assert open_target(Target("gitlab", "42", 7), SETTINGS).gl.url == SETTINGS.url
