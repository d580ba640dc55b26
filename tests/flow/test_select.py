"""Which change a review is about, in memory: flags first, then the CI job's environment
(GitLab's merge request variables, GitHub's event payload); anything unreadable is one usage
error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot.errors import UsageError
from reviewbot.flow.select import in_ci, target_of

GITLAB_CI = {"GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "7",
             "CI_MERGE_REQUEST_PROJECT_ID": "42", "CI_PROJECT_ID": "41"}


def _target(env: dict[str, str], **flags: object) -> tuple[str, str, int]:
    values = {"mr": None, "pr": None, "project": None, "repo": None, **flags}
    t = target_of(env=env, **values)  # type: ignore[arg-type]
    return (t.forge, t.project, t.number)


def test_a_gitlab_merge_request_job_reviews_its_own_merge_request() -> None:
    assert _target(GITLAB_CI) == ("gitlab", "42", 7)  # the MR's project, not a fork's pipeline
    assert _target(GITLAB_CI, mr=9, project="g/p") == ("gitlab", "g/p", 9)  # flags first


def test_a_github_actions_job_reads_its_event_payload(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event)}
    assert _target(env) == ("github", "o/r", 12)
    assert _target(env, pr=3, repo="x/y") == ("github", "x/y", 3)


@pytest.mark.parametrize(("env", "flags", "says"), [
    ({}, {"mr": 1, "pr": 2}, "either --mr or --pr"),
    ({}, {}, "nothing to review"),
    ({}, {"mr": 1}, "no GitLab project"),
    ({}, {"pr": 1}, "no GitHub repository"),
    ({"CI_MERGE_REQUEST_IID": "7; rm -rf /", "CI_PROJECT_ID": "1"}, {},
     "CI_MERGE_REQUEST_IID is not a number"),
])
def test_what_names_no_change_is_a_usage_error(env: dict[str, str], flags: dict[str, object],
                                               says: str) -> None:
    with pytest.raises(UsageError, match=says):
        _target(env, **flags)


@pytest.mark.parametrize("payload", ["{not json", json.dumps({"pull_request": {"number": "12"}}),
                                     json.dumps([1, 2]), json.dumps({"issue": {"number": 5}})])
def test_an_event_payload_without_a_pull_request_number_names_no_change(
        tmp_path: Path, payload: str) -> None:
    event = tmp_path / "event.json"
    event.write_text(payload)
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event)}
    with pytest.raises(UsageError, match="GitHub event payload|nothing to review"):
        _target(env)


def test_a_missing_event_payload_is_named() -> None:
    with pytest.raises(UsageError, match="cannot read the GitHub event payload /nowhere.json"):
        _target({"GITHUB_EVENT_PATH": "/nowhere.json", "GITHUB_REPOSITORY": "o/r"})


def test_in_ci() -> None:
    assert in_ci({"GITLAB_CI": "true"}) and in_ci({"GITHUB_ACTIONS": "true"})
    assert not in_ci({}) and not in_ci({"GITLAB_CI": ""})
