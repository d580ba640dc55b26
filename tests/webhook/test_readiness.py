"""`/readyz`'s checks (reviewbot.webhook.readiness) against a real SQLite queue and a real
model server over HTTP: ready only when all three hold, and each problem said in one line."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.readiness import readiness
from tests.fake_openai import FakeOpenAI, Reply


def _no_call(body: dict[str, object], attempt: int) -> Reply:
    raise AssertionError("readiness asks /models only")


def test_ready_only_when_the_database_the_backend_and_the_workers_hold(tmp_path: Path) -> None:
    queue = JobQueue.open(f"sqlite:///{tmp_path / 'q.db'}")
    with FakeOpenAI(_no_call) as server:
        ok, checks = asyncio.run(readiness(queue, server.base_url, workers_alive=True))
        assert ok and checks == {"database": "ok", "backend": "ok", "workers": "ok"}
        ok, checks = asyncio.run(readiness(queue, server.base_url, workers_alive=False))
        assert not ok and checks["workers"] == "the dispatcher thread is not running"
    ok, checks = asyncio.run(readiness(queue, server.base_url, workers_alive=True))
    assert not ok and checks["backend"].startswith("backend unreachable: ")  # it has stopped
    ok, checks = asyncio.run(readiness(queue, None, workers_alive=True))
    assert ok and checks["backend"] == "not configured, not checked"


def test_a_database_that_takes_no_writes_is_not_ready(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    queue = JobQueue.open(f"sqlite:///{path}")
    if os.geteuid() == 0:  # root writes through file modes: hold the write lock instead
        import sqlite3
        holder = sqlite3.connect(path, timeout=0)
        holder.execute("BEGIN EXCLUSIVE")
    else:
        path.chmod(stat.S_IRUSR)
    ok, checks = asyncio.run(readiness(queue, None, workers_alive=True))
    assert not ok and checks["database"] != "ok"
