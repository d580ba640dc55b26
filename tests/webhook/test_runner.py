"""The production adapter and the `--runner` test hook."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from reviewbot.config import Settings, resolve
from reviewbot.errors import ReviewbotError, UsageError
from reviewbot.webhook.jobs import Job, Outcome
from reviewbot.webhook.runner import ForgeRunner, load_runner
from reviewbot.webhook.worker import is_retryable
from tests.webhook.webhook_support import free_port

JOB = Job(1, "gitlab", "42", 7, "c" * 40, "https://gitlab.example.com", "d1", 0.0)


def test_run_review_does_nothing_once_cancelled() -> None:
    cancel = threading.Event()
    cancel.set()
    assert ForgeRunner(Settings())(JOB, cancel) == Outcome.cancelled()


def test_load_runner() -> None:
    assert isinstance(load_runner(None, Settings()), ForgeRunner)
    assert load_runner("tests.webhook.recording_runner:noop", Settings())(JOB, threading.Event()) == Outcome.done()
    for bad in ("nocolon", "no_such_module_xyz:run", "tests.webhook.recording_runner:missing", ":x"):
        with pytest.raises(UsageError):
            load_runner(bad, Settings())


def test_run_review_with_nothing_reachable_raises_a_retryable_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through the real engine: a backend/forge that cannot be reached is retried later."""
    monkeypatch.chdir(tmp_path)  # no .reviewbot.toml
    monkeypatch.setenv("REVIEWBOT_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("REVIEWBOT_GITLAB_TOKEN", "glpat-test-token-0001")
    job = Job(1, "gitlab", "42", 7, "c" * 40, f"http://127.0.0.1:{free_port()}", "d1", 0.0)
    with pytest.raises(ReviewbotError) as caught:
        load_runner(None, resolve({}))(job, threading.Event())
    assert is_retryable(caught.value)
    assert "glpat-test-token-0001" not in str(caught.value)


def test_log_lines_never_carry_url_passwords_or_tokens(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from reviewbot.errors import RedactingFilter, register_secret

    register_secret("glpat-log-token-0002")
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, 'HTTP Request: POST %s "%s"',
                               ("http://bob:s3cret@127.0.0.1:8000/v1/chat", "glpat-log-token-0002"),
                               None)
    assert handler.filter(record)
    text = record.getMessage()
    assert "s3cret" not in text and "glpat-log-token-0002" not in text and "***@127.0.0.1" in text
