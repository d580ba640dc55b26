"""A real review runner for tests: records each finished review in a SQLite file.

Used in-process (`RecordingRunner`) and by the `reviewbot webhook` subprocess through the
`--runner recording_runner:run` test hook, configured by environment variables:

    RECORDING_DB      where reviews (and starts) are recorded
    RECORDING_GATE    if set, a review blocks until this file exists (or it is cancelled)
    RECORDING_DELAY   seconds a review takes (cancellable), default 0
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from reviewbot.webhook.jobs import Job, JobOutcome

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    kind TEXT NOT NULL, job_id INTEGER NOT NULL, forge TEXT NOT NULL, project TEXT NOT NULL,
    number INTEGER NOT NULL, head_sha TEXT NOT NULL, pid INTEGER NOT NULL, at REAL NOT NULL
);
"""


def record(db: Path, kind: str, job: Job) -> None:
    conn = sqlite3.connect(db, timeout=10)
    try:
        with conn:
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (kind, job.id, job.forge, job.project, job.number, job.head_sha, os.getpid(),
                 time.time()),
            )
    finally:
        conn.close()


def recorded(db: Path, kind: str = "review") -> list[tuple[int, str, str, int, str]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(db, timeout=10)
    try:
        conn.executescript(_SCHEMA)
        return conn.execute(
            "SELECT job_id, forge, project, number, head_sha FROM events WHERE kind = ?"
            " ORDER BY rowid", (kind,)
        ).fetchall()
    finally:
        conn.close()


def run(job: Job, cancel: threading.Event) -> JobOutcome:
    """The subprocess runner: start → (gate/delay, cancellable) → review recorded."""
    db = Path(os.environ["RECORDING_DB"])
    record(db, "start", job)
    gate = os.environ.get("RECORDING_GATE")
    delay = float(os.environ.get("RECORDING_DELAY", "0"))
    deadline = time.monotonic() + 60
    while gate and not Path(gate).exists() and time.monotonic() < deadline:
        if cancel.wait(0.02):
            return JobOutcome.cancelled()
    if cancel.wait(delay):
        return JobOutcome.cancelled()
    record(db, "review", job)
    return JobOutcome.done()


def noop(job: Job, cancel: threading.Event) -> JobOutcome:
    return JobOutcome.done()


class RecordingRunner:
    """In-process runner: each call takes `delay` s (or `delay(job)`; cancellable), then
    `behave(job, attempt)` may raise."""

    def __init__(
        self,
        db: Path,
        delay: float | Callable[[Job], float] = 0.0,
        behave: Callable[[Job, int], None] | None = None,
    ) -> None:
        self.db = db
        self.delay = delay
        self.behave = behave
        self.calls: list[int] = []
        self.active = 0
        self.peak: dict[str, int] = {}
        self._active_by_forge: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        with self._lock:
            self.calls.append(job.id)
            attempt = self.calls.count(job.id)
            n = self._active_by_forge.get(job.forge, 0) + 1
            self._active_by_forge[job.forge] = n
            self.active += 1
            self.peak[job.forge] = max(self.peak.get(job.forge, 0), n)
            self.peak["total"] = max(self.peak.get("total", 0), self.active)
        try:
            record(self.db, "start", job)
            delay = self.delay(job) if callable(self.delay) else self.delay
            if cancel.wait(delay):
                return JobOutcome.cancelled()
            if self.behave is not None:
                self.behave(job, attempt)
            record(self.db, "review", job)
            return JobOutcome.done()
        finally:
            with self._lock:
                self._active_by_forge[job.forge] -= 1
                self.active -= 1
