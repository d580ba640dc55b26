"""The production adapter and the `--runner` test hook."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from reviewbot.errors import ReviewbotError, UsageError
from reviewbot.flow.trust import Trust
from reviewbot.webhook.jobs import Job, JobOutcome
from reviewbot.webhook.runner import ForgeRunner, load_runner
from reviewbot.webhook.worker import is_retryable
from tests.webhook.webhook_support import free_port

JOB = Job(1, "gitlab", "42", 7, "c" * 40, "https://gitlab.example.com", "d1", 0.0)


def test_run_review_does_nothing_once_cancelled() -> None:
    cancel = threading.Event()
    cancel.set()
    assert ForgeRunner(Trust())(JOB, cancel) == JobOutcome.cancelled()


def test_load_runner() -> None:
    assert isinstance(load_runner(None, Trust()), ForgeRunner)
    assert load_runner("tests.webhook.recording_runner:noop", Trust())(JOB, threading.Event()) == JobOutcome.done()
    for bad in ("nocolon", "no_such_module_xyz:run", "tests.webhook.recording_runner:missing", ":x"):
        with pytest.raises(UsageError):
            load_runner(bad, Trust())


def test_run_review_with_nothing_reachable_raises_a_retryable_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through the real engine: a backend/forge that cannot be reached is retried later."""
    monkeypatch.chdir(tmp_path)  # no .reviewbot.toml
    monkeypatch.setenv("REVIEWBOT_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("REVIEWBOT_GITLAB_TOKEN", "glpat-test-token-0001")
    job = Job(1, "gitlab", "42", 7, "c" * 40, f"http://127.0.0.1:{free_port()}", "d1", 0.0)
    with pytest.raises(ReviewbotError) as caught:
        load_runner(None, Trust.for_listener(os.environ))(job, threading.Event())
    assert is_retryable(caught.value)
    assert "glpat-test-token-0001" not in str(caught.value)


def test_log_lines_never_carry_url_passwords_or_tokens(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from reviewbot.redact import RedactingFilter, register_secret

    register_secret("glpat-log-token-0002")
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, 'HTTP Request: POST %s "%s"',
                               ("http://bob:s3cret@127.0.0.1:8000/v1/chat", "glpat-log-token-0002"),
                               None)
    assert handler.filter(record)
    text = record.getMessage()
    assert "s3cret" not in text and "glpat-log-token-0002" not in text and "***@127.0.0.1" in text


def test_a_review_that_fails_for_good_is_logged_and_said_on_the_merge_request(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The model server is down: after the last attempt the log has one failure line with the
    reason, and the MR's summary note says it was not reviewed (its state marker kept)."""
    import json
    import logging

    import httpx

    from tests.forges.fake_gitlab import FakeGitLab
    from tests.forges.gitlab_support import TOKEN, scenario
    from tests.forges.gitrepo import Repo
    from tests.webhook.webhook_support import GITLAB_SECRET, ThreadServer, make_settings, wait_for

    repo = Repo(tmp_path / "repo")
    base, head = scenario(repo)
    from reviewbot.history import HistoryStore, ReviewOutcome
    from reviewbot.webhook.dashboard import build

    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as gitlab:
        review = Trust({"gitlab_token": TOKEN, "base_url": f"http://127.0.0.1:{free_port()}/v1"})
        listener = make_settings(tmp_path / "q.sqlite", max_attempts=2, retry_backoff_s=0.05,
                                 forge_urls=(gitlab.url,))
        history = HistoryStore.open(tmp_path / "q.sqlite")
        body = json.dumps({"object_kind": "merge_request", "object_attributes": {
            "action": "open", "iid": 7, "last_commit": {"id": head}},
            "project": {"id": 42, "web_url": f"{gitlab.url}/grp/proj",
                        "path_with_namespace": "grp/proj"}}).encode()
        headers = {"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": GITLAB_SECRET,
                   "Content-Type": "application/json"}
        with caplog.at_level(logging.INFO, logger="reviewbot.webhook"), \
                ThreadServer(listener, ForgeRunner(review, history=history)) as srv:
            assert httpx.post(f"{srv.url}/webhook/gitlab", content=body,
                              headers=headers).status_code == 202
            wait_for(lambda: srv.queue.counts()["failed"] == 1, timeout=60)
            wait_for(lambda: any("Not reviewed" in n["body"] for n in gitlab.notes()))
        (summary,) = [n["body"] for n in gitlab.notes() if "Not reviewed" in n["body"]]
    assert "after 2 attempt(s)" in summary and "model server" in summary.lower()
    failures = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 1 and "failed: after 2 attempt(s)" in failures[0]
    # the history and the dashboard say so too (they said "no reviews recorded" and
    # "Every change's latest review completed")
    attempts = history.recent()
    assert [r.outcome for r in attempts] == [ReviewOutcome.FAILED] * 2
    assert "cannot reach the model server" in attempts[0].reason
    from reviewbot.conversation.learnings import LearningStore

    board = build(history, LearningStore.open(tmp_path / "q.sqlite"))
    assert [(r.number, r.outcome) for r in board.attention] == [(7, ReviewOutcome.FAILED)]
    assert any("attempt 1 failed, retried" in r.getMessage() for r in caplog.records)
