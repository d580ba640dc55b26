"""`reviewbot reply`'s own rules, in this process: which comment options go with which forge,
each wrong combination a usage error (exit 2) before any forge is asked, and the JSON line it
prints. Answering through both forges as a process: tests/forges/*/test_threads.py."""

from __future__ import annotations

import json

import httpx
import pytest
from click.testing import CliRunner

from reviewbot.commands.reply import reply
from reviewbot.errors import UsageError
from tests.forges.fake_gitlab import DEV_TOKEN
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401 - fixture "env"

NOWHERE = ["--gitlab-url", "http://127.0.0.1:9", "--github-url", "http://127.0.0.1:9"]


@pytest.mark.parametrize("args, says", [
    ([], "give exactly one of --mr"),
    (["--mr", "7", "--pr", "7", "--note", "1"], "give exactly one of --mr"),
    (["--mr", "7"], "--mr takes --note"),
    (["--mr", "7", "--note", "1", "--comment", "2"], "--mr takes --note"),
    (["--pr", "7", "--note", "1"], "--pr takes one of --comment or --issue-comment"),
    (["--pr", "7", "--comment", "1", "--issue-comment", "2"], "--pr takes one of"),
    (["--pr", "7"], "--pr takes one of"),
])
def test_a_wrong_combination_is_a_usage_error_before_any_forge_is_asked(
        args: list[str], says: str) -> None:
    result = CliRunner().invoke(reply, [*args, *NOWHERE], env={"REVIEWBOT_GITLAB_TOKEN": TOKEN})
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == 2
    assert says in str(result.exception)


def test_a_note_not_for_the_bot_is_left_alone_and_said_so(env: Env) -> None:
    said = httpx.post(env.gitlab.url + "/api/v4/projects/42/merge_requests/7/notes",
                      json={"body": "plain talk between people, no mention"},
                      headers={"PRIVATE-TOKEN": DEV_TOKEN})
    note = said.json()["id"]
    result = CliRunner().invoke(
        reply, ["--mr", "7", "--project", "42", "--note", str(note), "--gitlab-url",
                env.gitlab.url, "--base-url", "http://127.0.0.1:9/v1", "--config", "/dev/null"],
        env={"REVIEWBOT_GITLAB_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["action"] == "not-addressed" and set(answer) == {"action", "detail"}
