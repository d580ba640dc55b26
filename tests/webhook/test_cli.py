"""`reviewbot webhook` as a command: usage errors, one process per database, no secrets in logs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx

from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    GITHUB_SECRET,
    GITLAB_SECRET,
    REVIEWBOT,
    free_port,
    github_event,
    gitlab_event,
    webhook_process,
)

CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REVIEWBOT), "webhook", *args], env=env, capture_output=True, check=False,
                          text=True, timeout=30)


def test_refuses_to_start_without_a_secret(tmp_path: Path) -> None:
    done = run_cli("--db", str(tmp_path / "q.sqlite"), "--port", str(free_port()), env=CLEAN_ENV)
    assert done.returncode == 2
    assert done.stderr.startswith("reviewbot: error: no webhook secret")
    assert done.stderr.count("\n") == 1


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    env = {**CLEAN_ENV, "REVIEWBOT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET}
    done = run_cli("--db", str(tmp_path / "q.sqlite"), "--workers", "0", env=env)
    assert (done.returncode, done.stderr) == (2, "reviewbot: error: --workers must be positive, got 0\n")
    done = run_cli("--db", str(tmp_path / "q.sqlite"), "--runner", "nope", env=env)
    assert done.returncode == 2 and "module:function" in done.stderr


def test_one_process_per_database_and_no_secret_in_logs(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    env = {"RECORDING_DB": str(tmp_path / "reviews.sqlite")}
    with webhook_process(db, env, "--log-level", "debug") as proc:
        second = run_cli("--db", str(db), "--port", str(free_port()), env={
            **CLEAN_ENV, "REVIEWBOT_GITLAB_WEBHOOK_SECRET": GITLAB_SECRET})
        assert second.returncode == 2 and "in use by another process" in second.stderr
        with httpx.Client(base_url=proc.url) as c:
            for token in (GITLAB_SECRET, "wrong"):
                headers, body = gitlab_event(token=token)
                c.post("/webhook/gitlab", content=body, headers=headers)
            headers, body = github_event()
            c.post("/webhook/github", content=body, headers=headers)
            c.get("/jobs", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            c.get("/jobs", headers={"Authorization": "Bearer wrong"})
            metrics = c.get("/metrics").text
    log = proc.log.read_text()
    for secret in (GITLAB_SECRET, GITHUB_SECRET, ADMIN_TOKEN):
        assert secret not in log and secret not in metrics and secret not in second.stderr
    assert "queued job" in log  # the log is there, and it says something
