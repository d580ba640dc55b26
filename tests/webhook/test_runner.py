"""The production adapter and the `--runner` test hook."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from webhook_support import free_port

import reviewbot.commands.forge as forge_commands
from reviewbot.errors import ReviewbotError, UsageError
from reviewbot.webhook.jobs import Job, Outcome
from reviewbot.webhook.runner import load_runner, run_review
from reviewbot.webhook.worker import is_retryable

JOB = Job(1, "gitlab", "42", 7, "c" * 40, "https://gitlab.example.com", "d1", 0.0)


def test_run_review_calls_the_engine_with_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, object]] = []

    def review_forge_change(**kwargs: object) -> tuple[object, int]:
        calls.append(kwargs)
        return object(), 1

    monkeypatch.setattr(forge_commands, "review_forge_change", review_forge_change)
    cancel = threading.Event()
    assert run_review(JOB, cancel) == Outcome.done("review exit code 1")
    assert calls == [{"forge": "gitlab", "project": "42", "number": 7, "head_sha": "c" * 40,
                      "forge_url": "https://gitlab.example.com", "cancel": cancel}]


def test_run_review_does_nothing_once_cancelled() -> None:
    cancel = threading.Event()
    cancel.set()
    assert run_review(JOB, cancel) == Outcome.cancelled()


def test_load_runner() -> None:
    assert load_runner(None) is run_review
    assert load_runner("recording_runner:noop")(JOB, threading.Event()) == Outcome.done()
    for bad in ("nocolon", "no_such_module_xyz:run", "recording_runner:missing", ":x"):
        with pytest.raises(UsageError):
            load_runner(bad)


def test_run_review_with_nothing_reachable_raises_a_retryable_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through the real engine: a backend/forge that cannot be reached is retried later."""
    monkeypatch.chdir(tmp_path)  # no .reviewbot.toml
    monkeypatch.setenv("REVIEWBOT_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("REVIEWBOT_GITLAB_TOKEN", "glpat-test-token-0001")
    job = Job(1, "gitlab", "42", 7, "c" * 40, f"http://127.0.0.1:{free_port()}", "d1", 0.0)
    with pytest.raises(ReviewbotError) as caught:
        run_review(job, threading.Event())
    assert is_retryable(caught.value)
    assert "glpat-test-token-0001" not in str(caught.value)
