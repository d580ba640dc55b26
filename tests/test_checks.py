"""A check of a set-up (reviewbot.checks), and the project settings file's check: a file the
review would refuse fails doctor with the same words, and a fix."""

from __future__ import annotations

from reviewbot.checks import Check, Status, settings_file


def test_a_projects_settings_file_is_checked_as_the_review_reads_it() -> None:
    assert settings_file(None, ".reviewbot.toml").status is Status.OK
    assert settings_file('mode = "full"\nfail_on = "major"\n', ".reviewbot.toml").detail \
        == ".reviewbot.toml parses"
    bad = settings_file('findings_format = "free"\n', ".reviewbot.toml")
    assert bad.status is Status.FAILED and "findings_format must be one of" in bad.detail
    assert bad.fix == "fix .reviewbot.toml"
    unparsable = settings_file("mode = \n", ".reviewbot.toml")
    assert unparsable.status is Status.FAILED


def test_a_check_as_json_says_its_status_in_words() -> None:
    assert Check.skipped("forge", "no token here").to_dict() == {
        "name": "forge", "status": "skipped", "detail": "no token here", "fix": ""}
