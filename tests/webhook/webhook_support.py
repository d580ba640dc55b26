"""Helpers for the webhook tests: signed payloads, a server in a thread, one in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import httpx
import uvicorn

from reviewbot.webhook.app import create_app
from reviewbot.webhook.auth import github_signature
from reviewbot.webhook.jobs import ReviewRunner
from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.serving import server_config
from reviewbot.webhook.settings import WebhookSettings

GITLAB_SECRET = "gl-Kq7vX2pN9wR4tZ8mJ3"
GITHUB_SECRET = "gh-Hb6yT1cV5nQ8rW3kP0"
ADMIN_TOKEN = "adm-Fz4gL9sD2xM7jC5bN8"
HERE = Path(__file__).parent
REVIEWBOT = Path(sys.executable).parent / "reviewbot"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gitlab_event(
    project_id: int = 42,
    iid: int = 7,
    sha: str = "a" * 40,
    action: str = "update",
    oldrev: bool = True,
    key: str | None = None,
    token: str | None = GITLAB_SECRET,
    path: str = "team/app",
) -> tuple[dict[str, str], bytes]:
    attrs: dict[str, object] = {"action": action, "iid": iid, "last_commit": {"id": sha}}
    if oldrev:
        attrs["oldrev"] = "0" * 40
    body = json.dumps({
        "object_kind": "merge_request",
        "project": {"id": project_id, "web_url": f"https://gitlab.example.com/{path}",
                    "path_with_namespace": path},
        "object_attributes": attrs,
    }).encode()
    headers = {"X-Gitlab-Event": "Merge Request Hook", "Content-Type": "application/json",
               "Idempotency-Key": key or str(uuid.uuid4())}
    if token is not None:
        headers["X-Gitlab-Token"] = token
    return headers, body


def github_event(
    repo: str = "octo/app",
    number: int = 3,
    sha: str = "b" * 40,
    action: str = "synchronize",
    delivery: str | None = None,
    secret: str | None = GITHUB_SECRET,
    event: str = "pull_request",
) -> tuple[dict[str, str], bytes]:
    body = json.dumps({
        "action": action,
        "number": number,
        "pull_request": {"number": number, "head": {"sha": sha}},
        "repository": {"full_name": repo, "url": f"https://api.github.com/repos/{repo}"},
    }).encode()
    headers = {"X-GitHub-Event": event, "Content-Type": "application/json",
               "X-GitHub-Delivery": delivery or str(uuid.uuid4())}
    if secret is not None:
        headers["X-Hub-Signature-256"] = github_signature(secret, body)
    return headers, body


def make_settings(db: Path, **overrides: object) -> WebhookSettings:
    """`gitlab_secret=`/`github_secret=` (None: that hook unset) go into `secrets`."""
    secrets = {"gitlab": GITLAB_SECRET, "github": GITHUB_SECRET}
    for forge in ("gitlab", "github"):
        secrets[forge] = overrides.pop(f"{forge}_secret", secrets[forge])  # type: ignore[assignment]
    base: dict[str, object] = {
        "db_path": db, "secrets": {k: v for k, v in secrets.items() if v},
        "admin_token": ADMIN_TOKEN, "retry_backoff_s": 0.05, "shutdown_grace_s": 5.0,
        "forge_urls": ("https://gitlab.example.com", "https://api.github.com"),
    }
    base.update(overrides)
    return WebhookSettings(**base)  # type: ignore[arg-type]


def wait_for(predicate: object, timeout: float = 30.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")


class ThreadServer:
    """`create_app` served by uvicorn on a thread, on a free loopback port."""

    def __init__(self, settings: WebhookSettings, runner: ReviewRunner) -> None:
        self.queue = JobQueue.open(settings.database_url, settings.lease_s)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = server_config(create_app(settings, self.queue, runner), settings, "127.0.0.1",
                               self.port, "warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        wait_for(lambda: self.server.started, timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.queue.close()


@contextmanager
def webhook_process(
    db: Path, env: Mapping[str, str], *args: str, port: int | None = None,
    runner: str | None = "tests.webhook.recording_runner:run", queue_url: str | None = None,
) -> Iterator[WebhookProcess]:
    """`runner` None: the production runner (the real engine and forges). `queue_url`: the
    queue there instead of the SQLite file `db` (which then only names the log)."""
    proc = WebhookProcess(db, env, args, port or free_port(), runner, queue_url)
    try:
        proc.start()
        yield proc
    finally:
        proc.stop()


class WebhookProcess:
    """A real `reviewbot webhook` process (test runner from this directory)."""

    def __init__(self, db: Path, env: Mapping[str, str], args: tuple[str, ...], port: int,
                 runner: str | None = "tests.webhook.recording_runner:run",
                 queue_url: str | None = None) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        # a queue URL carries its password: in the environment, never in argv (`ps`)
        queue = () if queue_url else ("--db", str(db))
        self.cmd = [str(REVIEWBOT), "webhook", "--host", "127.0.0.1", "--port", str(port),
                    *queue, *(("--runner", runner) if runner else ()), "--log-level",
                    "warning", *args]
        self.env = {
            **os.environ,
            "PYTHONPATH": str(HERE.parents[1]),  # the repository: tests.webhook.recording_runner
            "PYTHONFAULTHANDLER": "1",
            "REVIEWBOT_GITLAB_WEBHOOK_SECRET": GITLAB_SECRET,
            "REVIEWBOT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET,
            "REVIEWBOT_ADMIN_TOKEN": ADMIN_TOKEN,
            "REVIEWBOT_WEBHOOK_FORGE_URLS": "https://gitlab.example.com",
            **({"REVIEWBOT_QUEUE_URL": queue_url} if queue_url else {}),
            **env,
        }
        self.log = db.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=log, stderr=log)
        # generous: in CI a vLLM server computing on the same two cores can starve the start
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"webhook exited early: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack to the log
        self.proc.wait(timeout=10)
        raise AssertionError(f"webhook did not become healthy: {self.log.read_text()[-4000:]}")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
