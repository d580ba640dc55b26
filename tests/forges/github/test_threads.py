"""Talking to the bot on GitHub: `reviewbot reply` as a real process, a scripted model server,
the strict fake GitHub with a collaborator (maria, write) and a stranger (mallory, read), over
real HTTP: review-comment replies, conversation comments, 👀 reactions, GraphQL resolving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from reviewbot.choices import ReviewMode
from reviewbot.findings import Severity
from reviewbot.flow import service
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.base import Target
from reviewbot.webhook.auth import github_signature
from tests.fake_openai import FakeOpenAI, Reply, user_text
from tests.forges.fake_github import MALLORY_TOKEN, MARIA, MARIA_TOKEN, FakeGitHub
from tests.forges.github_support import (  # noqa: F401
    Reviewer,
    fake_github,
    finding,
    forge,
    settings,
)
from tests.webhook.webhook_support import GITHUB_SECRET, wait_for, webhook_process

PULL = "/repos/acme/widgets"


def _finding_thread(fake: FakeGitHub) -> dict[str, Any]:
    """The bot's "Unchecked parse" finding comment, after one review."""
    if not fake.review_comments:
        found = finding("src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse")
        review_change_request(forge(fake), Reviewer(every=1000, extra=[found]), mode=ReviewMode.FULL)
    (root,) = [c for c in fake.review_comments if "Unchecked parse" in c["body"]
               and not c.get("in_reply_to_id")]
    return root


def _say(fake: FakeGitHub, token: str, body: str, root: dict[str, Any] | None = None) -> int:
    """A person's comment: a reply to the review comment `root`, or a conversation comment."""
    path = (f"{PULL}/pulls/7/comments/{root['id']}/replies" if root
            else f"{PULL}/issues/7/comments")
    r = httpx.post(fake.base_url + path, json={"body": body},
                   headers={"Authorization": f"token {token}"})
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _reply(fake: FakeGitHub, model: FakeOpenAI | None, *which: str
           ) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    base = model.base_url if model else "http://127.0.0.1:9/v1"  # nothing listens there
    args = ["reply", "--pr", "7", "--repo", fake.full_name, *which, "--github-url",
            fake.base_url, "--base-url", base]
    return subprocess.run([sys.executable, "-m", "reviewbot", *args], check=False,
                          capture_output=True, text=True, timeout=300,
                          env={**clean, "GITHUB_TOKEN": fake.token},
                          cwd=Path(__file__).parents[3])


def _action(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout)["action"])


def _answer(verdict: str, body: str = "You are right: the caller validates it.") -> Any:
    def script(request: dict[str, Any], attempt: int) -> Reply:
        return Reply(tool_name="reply", tool_args={"body": body, "verdict": verdict})
    return script


def test_a_collaborators_reply_is_answered_in_its_thread_and_a_withdrawal_resolves_it(
        fake: FakeGitHub) -> None:
    root = _finding_thread(fake)
    question = _say(fake, MARIA_TOKEN, "@reviewbot is this real? The caller validates it.", root)
    with FakeOpenAI(_answer("withdraw"), max_model_len=16000) as model:
        assert _action(_reply(fake, model, "--comment", str(question))) == "answered"
        (request,) = model.requests
    prompt = user_text(request)
    assert "> @reviewbot is this real? The caller validates it." in prompt
    assert "maria wrote:" in prompt and "Unchecked parse" in prompt
    answer = fake.review_comments[-1]
    assert answer["in_reply_to_id"] == root["id"] and answer["user"]["login"] == "reviewbot[bot]"
    assert answer["body"].startswith("You are right: the caller validates it.")
    assert root["id"] in fake.resolved  # withdrawn: resolved through GraphQL
    assert [(r["on"], r["id"], r["content"]) for r in fake.reactions] == [
        ("pulls", question, "eyes")]


def test_a_strangers_commands_do_nothing_and_cost_no_model_request(fake: FakeGitHub) -> None:
    root = _finding_thread(fake)
    review = _say(fake, MALLORY_TOKEN, "@reviewbot review")
    ignore = _say(fake, MALLORY_TOKEN, "@reviewbot ignore", root)
    assert _action(_reply(fake, None, "--issue-comment", str(review))) == "not-a-member"
    assert _action(_reply(fake, None, "--comment", str(ignore))) == "not-a-member"
    assert not fake.reactions and not fake.resolved
    assert fake.review_comments[-1]["id"] == ignore  # mallory's reply got no answer


def test_pause_in_the_conversation_stops_reviews_and_the_authors_own_is_refused(
        fake: FakeGitHub) -> None:
    _finding_thread(fake)
    fake.pulls[7].author = dict(MARIA)
    own = _say(fake, MARIA_TOKEN, "@reviewbot pause")
    assert _action(_reply(fake, None, "--issue-comment", str(own))) == "author-refused"
    fake.permissions["dana"] = "admin"
    fake.others["ghp_dana_token_00000000000"] = {"login": "dana", "id": 701, "type": "User"}
    pause = _say(fake, "ghp_dana_token_00000000000", "@reviewbot pause")
    assert _action(_reply(fake, None, "--issue-comment", str(pause))) == "pause"
    assert "Paused:" in fake.issue_comments[-1]["body"]
    run = review_change_request(forge(fake), Reviewer(every=1000), mode=ReviewMode.FULL)
    assert run.mode == "paused"


def test_ignore_resolves_the_thread_and_a_later_review_does_not_raise_it_again(
        fake: FakeGitHub) -> None:
    root = _finding_thread(fake)
    ignore = _say(fake, MARIA_TOKEN, "@reviewbot ignore", root)
    assert _action(_reply(fake, None, "--comment", str(ignore))) == "ignored"
    assert root["id"] in fake.resolved
    assert "will not raise this finding again" in fake.review_comments[-1]["body"]
    found = finding("src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse")
    roots = len([c for c in fake.review_comments if not c.get("in_reply_to_id")])
    review_change_request(forge(fake), Reviewer(every=1000, extra=[found]), mode=ReviewMode.FULL)
    assert len([c for c in fake.review_comments if not c.get("in_reply_to_id")]) == roots


def test_a_comment_of_another_pull_request_is_refused(fake: FakeGitHub) -> None:
    fake.open_pull(fake.pulls[7].base, fake.pulls[7].head, number=8)
    other = _say(fake, MARIA_TOKEN, "@reviewbot help")
    fake.issue_comments[-1]["number"] = 8
    fake.issue_comments[-1]["issue_url"] = fake.issue_comments[-1]["issue_url"][:-1] + "8"
    proc = _reply(fake, None, "--issue-comment", str(other))
    assert proc.returncode == 2 and "is not on pull request #7" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_comment_event_through_the_listener_is_answered_once(fake: FakeGitHub,
                                                               tmp_path: Path) -> None:
    root = _finding_thread(fake)
    body = "@reviewbot is this reachable at all?"
    question = _say(fake, MARIA_TOKEN, body, root)
    payload = json.dumps({
        "action": "created", "comment": {"id": question, "body": body, "user": MARIA},
        "pull_request": {"number": 7, "head": {"sha": fake.pulls[7].head}},
        "repository": {"full_name": fake.full_name,
                       "url": f"{fake.base_url}/repos/{fake.full_name}"}}).encode()
    headers = {"X-GitHub-Event": "pull_request_review_comment", "X-GitHub-Delivery": "d-1",
               "X-Hub-Signature-256": github_signature(GITHUB_SECRET, payload),
               "Content-Type": "application/json"}
    env = {"REVIEWBOT_WEBHOOK_FORGE_URLS": fake.base_url, "GITHUB_TOKEN": fake.token,
           "REVIEWBOT_MAX_CONTEXT": "16000"}
    with FakeOpenAI(_answer("keep", "Yes: the parser calls it."), max_model_len=16000) as model:
        env["REVIEWBOT_BASE_URL"] = model.base_url
        with webhook_process(tmp_path / "queue.sqlite", env, runner=None) as proc:
            sent = httpx.post(f"{proc.url}/webhook/github", content=payload, headers=headers)
            assert sent.status_code == 202, sent.text
            wait_for(lambda: fake.review_comments[-1]["user"]["login"] == "reviewbot[bot]",
                     timeout=60)
            again = httpx.post(f"{proc.url}/webhook/github", content=payload,
                               headers={**headers, "X-GitHub-Delivery": "d-2"})
            assert again.json()["status"] == "duplicate"
    answers = [c for c in fake.review_comments if c.get("in_reply_to_id") == root["id"]
               and c["user"]["login"] == "reviewbot[bot]"]
    assert len(answers) == 1 and answers[0]["body"].startswith("Yes: the parser calls it.")
    assert len(model.requests) == 1


def _react(fake: FakeGitHub, token: str, comment: int, content: str) -> None:
    r = httpx.post(f"{fake.base_url}{PULL}/pulls/comments/{comment}/reactions",
                   json={"content": content}, headers={"Authorization": f"token {token}"})
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("installation", [False, True], ids=["user-token", "app-token"])
def test_a_collaborators_thumbs_down_is_read_by_the_next_review(fake: FakeGitHub,
                                                                installation: bool) -> None:
    """Also with an installation token, which GET /user refuses: the bot knows its login only."""
    fake.user_forbidden = installation
    root = _finding_thread(fake)
    _react(fake, MALLORY_TOKEN, root["id"], "-1")  # a stranger's: nothing
    _react(fake, MARIA_TOKEN, root["id"], "+1")
    found = finding("src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse")
    order = service.ReviewOrder.opened(Target("github", fake.full_name, 7), settings(
        fake, mode=ReviewMode.FULL, github_bot_login="reviewbot[bot]"))
    service.review(order, Reviewer(every=1000, extra=[found]))
    assert root["id"] not in fake.resolved
    _react(fake, MARIA_TOKEN, root["id"], "-1")
    moved = replace(found, line=6, fingerprint="fp-moved-elsewhere")  # anchored elsewhere now
    run, code = service.review(order, Reviewer(every=1000, extra=[moved]))
    assert root["id"] in fake.resolved and "after a 👎 from" in fake.review_comments[-1]["body"]
    assert not [c for c in fake.review_comments if c["id"] > root["id"]
                and not c.get("in_reply_to_id") and "Unchecked parse" in c["body"]]
    assert "1 a project member dismissed earlier" in run.summary and code == 0


def test_a_question_on_the_conversation_tab_is_answered_there(fake: FakeGitHub) -> None:
    question = _say(fake, MARIA_TOKEN, "@reviewbot what does this change do to src/app.py?")

    def script(request: dict[str, Any], attempt: int) -> Reply:
        return Reply(tool_name="answer", tool_args={"body": "It edits two lines of it."})

    with FakeOpenAI(script, max_model_len=16000) as model:
        assert _action(_reply(fake, model, "--issue-comment", str(question))) == "answered"
        assert "--- src/app.py" in user_text(model.requests[0])
    assert fake.issue_comments[-1]["body"].startswith("It edits two lines of it.")
    assert fake.issue_comments[-1]["user"]["login"] == "reviewbot[bot]"


def test_a_thread_a_person_resolved_leaves_the_gate_and_counts_as_dismissed(
        fake: FakeGitHub, tmp_path: Path) -> None:
    """REST does not say who resolved a review thread: GraphQL does. Resolved by a person, the
    finding no longer holds the gate, and with no code change since it counts as dismissed."""
    from reviewbot.conversation.learnings import FindingOutcome, LearningStore

    store = LearningStore.open(tmp_path / "webhook.sqlite")
    found = replace(finding("src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse"),
                    severity=Severity.CRITICAL)
    order = service.ReviewOrder.opened(Target("github", fake.full_name, 7),
                                settings(fake, mode=ReviewMode.FULL, fail_on="major"))
    _, code = service.review(order, Reviewer(every=1000, extra=[found]), learnings=store)
    (root,) = [c for c in fake.review_comments if "Unchecked parse" in c["body"]]
    assert code == 1  # the critical finding holds the gate
    fake.resolved[root["id"]] = MARIA["login"]  # resolved in the web page, without a word
    run, code = service.review(order, Reviewer(every=1000), learnings=store)
    (mine,) = [c for c in run.existing if c.fingerprint == "fp-unchecked-parse"]
    assert mine.resolved and mine.resolved_by_person and code == 0
    assert store.tally(fake.full_name)[fake.full_name][FindingOutcome.DISMISSED] == 1


def test_with_approve_before_publish_a_pending_review_waits_for_a_collaborator(
        fake: FakeGitHub) -> None:
    """One pending review, seen only by the bot, replaced by the next review (GitHub allows one
    per user); a stranger's `publish` does nothing, a collaborator's submits it."""
    order = service.ReviewOrder.opened(Target("github", fake.full_name, 7),
                                settings(fake, approve_before_publish=True))
    run, _ = service.review(order, Reviewer(every=1000, extra=[finding(
        "src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse")]))
    held = len(run.outcome.posted)
    assert "Unchecked parse" in [f.title for f in run.outcome.posted]
    service.review(order, Reviewer(every=1000, extra=[finding(
        "src/app.py", 5, title="Unchecked parse", fp="fp-unchecked-parse")]))
    pending = [r for r in fake.reviews if r["state"] == "PENDING"]
    assert len(pending) == 1 and not fake.submitted()
    (summary,) = fake.issue_comments
    assert "**Waiting for approval**" in summary["body"] and "Unchecked parse" in summary["body"]

    assert _action(_reply(fake, None, "--issue-comment", str(_say(
        fake, MALLORY_TOKEN, "@reviewbot publish")))) == "not-a-member"
    assert not fake.submitted()
    proc = _reply(fake, None, "--issue-comment", str(_say(fake, MARIA_TOKEN,
                                                          "@reviewbot publish")))
    assert _action(proc) == "published" and json.loads(proc.stdout)["detail"] == str(held)
    assert len(fake.submitted()) == held
    assert any("Unchecked parse" in c["body"] for c in fake.submitted())
    assert "**Published** at a project member's request" in fake.issue_comments[0]["body"]


def test_a_command_edited_into_someone_elses_comment_is_not_obeyed(fake: FakeGitHub) -> None:
    """Anyone with write access may edit anyone's comment, and the REST API does not say who
    did: maria's question, edited into `ignore`, is not obeyed as hers."""
    root = _finding_thread(fake)
    asked = _say(fake, MARIA_TOKEN, "@reviewbot why is this a problem?", root)
    edited = httpx.patch(f"{fake.base_url}/repos/{fake.full_name}/pulls/comments/{asked}",
                         json={"body": "@reviewbot ignore"},
                         headers={"Authorization": f"token {fake.token}"})
    assert edited.status_code == 200, edited.text
    assert _action(_reply(fake, None, "--comment", str(asked))) == "edited-refused"
    assert root["id"] not in fake.resolved
    assert "edited after it was written" in fake.review_comments[-1]["body"]
