"""The durable job queue: one SQLite database in WAL mode.

State machine (one row per accepted delivery)::

    queued ──claim──▶ running ──▶ done
      ▲  │              │  ├────▶ failed      (permanent error, or retries exhausted)
      │  │              │  └────▶ queued      (retryable error: not_before = now + backoff;
      │  │              │                      cancelled by shutdown; crash → recover())
      │  └──────────────┴───────▶ superseded  (a newer push to the same MR/PR was accepted)

`enqueue` commits before the listener answers 202, so an acknowledged event survives a
crash. `recover()` (run at start-up) puts rows left `running` back to `queued`: a review
interrupted by kill -9 runs again from the start (unless that was its last attempt). Reviews are therefore *at least once*;
they are *exactly once* in effect because the review posted to the forge is idempotent
(fingerprinted comments are skipped when already there) and because every transition out
of `running` is conditional on the row still being `running`.

One process owns a database at a time (`JobQueue.open` takes an exclusive lock file).
"""

from __future__ import annotations

import fcntl
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from reviewbot.errors import UsageError
from reviewbot.forges.base import ForgeName
from reviewbot.webhook.jobs import STATES, Job, JobRecord, QueuedRequest, State

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    forge         TEXT    NOT NULL,
    project       TEXT    NOT NULL,
    number        INTEGER NOT NULL,
    head_sha      TEXT    NOT NULL,
    base_url      TEXT    NOT NULL,
    delivery_id   TEXT    NOT NULL,
    received_at   REAL    NOT NULL,
    state         TEXT    NOT NULL DEFAULT 'queued',
    attempts      INTEGER NOT NULL DEFAULT 0,
    not_before    REAL    NOT NULL DEFAULT 0,
    reason        TEXT    NOT NULL DEFAULT '',
    superseded_by INTEGER,
    started_at    REAL,
    finished_at   REAL,
    note_id       INTEGER,
    UNIQUE (forge, delivery_id)
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, not_before, id);
CREATE INDEX IF NOT EXISTS jobs_by_change ON jobs (forge, project, number, state);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

_COLUMNS = (
    "id, forge, project, number, head_sha, base_url, delivery_id, received_at,"
    " state, attempts, reason, superseded_by, started_at, finished_at, note_id"
)


@dataclass(frozen=True)
class Enqueued:
    """The result of `enqueue`: the job, whether it was new, and the running jobs it superseded."""

    job_id: int
    created: bool
    superseded_running: tuple[int, ...] = ()
    superseded_queued: tuple[int, ...] = ()


def _record(row: tuple[object, ...]) -> JobRecord:
    job = Job(
        id=cast(int, row[0]),
        forge=cast(ForgeName, row[1]),
        project=cast(str, row[2]),
        number=cast(int, row[3]),
        head_sha=cast(str, row[4]),
        base_url=cast(str, row[5]),
        delivery_id=cast(str, row[6]),
        received_at=cast(float, row[7]),
        note_id=cast("int | None", row[14]),
    )
    return JobRecord(
        job=job,
        state=cast(State, row[8]),
        attempts=cast(int, row[9]),
        reason=cast(str, row[10]),
        superseded_by=cast("int | None", row[11]),
        started_at=cast("float | None", row[12]),
        finished_at=cast("float | None", row[13]),
    )


def _migrate(conn: sqlite3.Connection) -> None:
    """Columns added since a database was created (idempotent)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
    if "note_id" not in have:  # conversation jobs
        conn.execute("ALTER TABLE jobs ADD COLUMN note_id INTEGER")


class JobQueue:
    """All SQL lives here. Thread-safe: one connection behind a lock (writes are tiny)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        lock_file: IO[bytes] | None = None,
        checkpoint_conn: sqlite3.Connection | None = None,
    ) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._lock_file = lock_file
        self._checkpoint_conn = checkpoint_conn

    @classmethod
    def open(cls, path: Path) -> JobQueue:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_file = open(f"{path}.lock", "wb")  # noqa: SIM115 - held for the queue's life
        try:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            raise UsageError(f"queue database {path} is in use by another process") from None
        try:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            # Commits never checkpoint (an fsync on the request path); `checkpoint()` does,
            # from the dispatcher thread, on a connection of its own.
            conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.executescript(_SCHEMA)
            _migrate(conn)
            checkpoint_conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            checkpoint_conn.execute("PRAGMA busy_timeout=5000")
        except sqlite3.Error as exc:
            lock_file.close()
            raise UsageError(f"cannot open queue database {path}: {exc}") from None
        return cls(conn, lock_file, checkpoint_conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            if self._checkpoint_conn is not None:
                self._checkpoint_conn.close()
            if self._lock_file is not None:
                self._lock_file.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Cursor]:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    # -- listener side -------------------------------------------------------------------

    def enqueue(self, req: QueuedRequest, now: float | None = None) -> Enqueued:
        """Commit a job for `req` unless its delivery was seen; supersede older jobs of the change."""
        now = time.time() if now is None else now
        with self._tx() as cur:
            row = cur.execute(
                "SELECT id FROM jobs WHERE forge = ? AND delivery_id = ?",
                (req.forge, req.delivery_id),
            ).fetchone()
            if row is not None:
                return Enqueued(job_id=int(row[0]), created=False)
            cur.execute(
                "INSERT INTO jobs (forge, project, number, head_sha, base_url, delivery_id,"
                " received_at, note_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (req.forge, req.project, req.number, req.head_sha, req.base_url,
                 req.delivery_id, now, req.note_id),
            )
            new_id = cast(int, cur.lastrowid)
            if req.note_id is not None:  # a note is answered on its own: it supersedes nothing
                return Enqueued(job_id=new_id, created=True)
            # a push supersedes the older reviews of the change, never its notes
            older = cur.execute(
                "SELECT id, state FROM jobs WHERE forge = ? AND project = ? AND number = ?"
                " AND state IN ('queued', 'running') AND id < ? AND note_id IS NULL",
                (req.forge, req.project, req.number, new_id),
            ).fetchall()
            cur.execute(
                "UPDATE jobs SET state = 'superseded', superseded_by = ?, finished_at = ?,"
                " reason = 'a newer push was received' WHERE forge = ? AND project = ?"
                " AND number = ? AND state IN ('queued', 'running') AND id < ?"
                " AND note_id IS NULL",
                (new_id, now, req.forge, req.project, req.number, new_id),
            )
        return Enqueued(
            job_id=new_id,
            created=True,
            superseded_running=tuple(int(i) for i, s in older if s == "running"),
            superseded_queued=tuple(int(i) for i, s in older if s == "queued"),
        )

    # -- worker side ---------------------------------------------------------------------

    def recover(self, max_attempts: int) -> tuple[int, int]:
        """Jobs left `running` by a crash go back to `queued`, except those that were on
        their last attempt (a review that keeps killing the process must not loop forever):
        those fail. Returns (requeued, failed)."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE jobs SET state = 'failed', finished_at = ?, reason = 'interrupted"
                " (process died) on its last attempt' WHERE state = 'running' AND attempts >= ?",
                (time.time(), max_attempts),
            )
            failed = cur.rowcount
            cur.execute(
                "UPDATE jobs SET state = 'queued', started_at = NULL,"
                " reason = 'requeued after restart' WHERE state = 'running'"
            )
            return cur.rowcount, failed

    def claim(self, busy_forges: frozenset[str] = frozenset(), now: float | None = None) -> Job | None:
        """Mark the oldest due queued job (of a forge not in `busy_forges`) running."""
        now = time.time() if now is None else now
        skip = sorted(busy_forges)
        marks = ",".join("?" * len(skip))
        forge_filter = f" AND forge NOT IN ({marks})" if skip else ""
        with self._tx() as cur:
            row = cur.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE state = 'queued' AND not_before <= ?"
                f"{forge_filter} ORDER BY id LIMIT 1",
                (now, *skip),
            ).fetchone()
            if row is None:
                return None
            cur.execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = ?"
                " WHERE id = ?",
                (now, row[0]),
            )
        return _record(row).job

    def finish(self, job_id: int, state: State, reason: str = "", now: float | None = None) -> bool:
        """Move a running job to `done` or `failed`; False if it is no longer running."""
        now = time.time() if now is None else now
        with self._tx() as cur:
            cur.execute(
                "UPDATE jobs SET state = ?, reason = ?, finished_at = ?"
                " WHERE id = ? AND state = 'running'",
                (state, reason, now, job_id),
            )
            return cur.rowcount == 1

    def requeue(self, job_id: int, not_before: float, reason: str, count_attempt: bool = True) -> bool:
        """Put a running job back in the queue (retry later, or after a shutdown)."""
        with self._tx() as cur:
            cur.execute(
                "UPDATE jobs SET state = 'queued', not_before = ?, reason = ?, started_at = NULL,"
                " attempts = attempts - ? WHERE id = ? AND state = 'running'",
                (not_before, reason, 0 if count_attempt else 1, job_id),
            )
            return cur.rowcount == 1

    def attempts(self, job_id: int) -> int:
        with self._lock:
            row = self._conn.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return int(row[0]) if row else 0

    def checkpoint(self) -> None:
        """Copy the WAL into the database without blocking writers (PASSIVE)."""
        if self._checkpoint_conn is not None:
            self._checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def next_due(self) -> float | None:
        """When the earliest queued job becomes due (None if nothing is queued)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT MIN(not_before) FROM jobs WHERE state = 'queued'"
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    # -- operator side -------------------------------------------------------------------

    def get(self, job_id: int) -> JobRecord | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        return None if row is None else _record(row)

    def list(self, state: State | None = None, limit: int = 100) -> list[JobRecord]:
        where, args = ("WHERE state = ?", (state,)) if state else ("", ())
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY id DESC LIMIT ?", (*args, limit)
            ).fetchall()
        return [_record(r) for r in rows]

    def counts(self) -> dict[State, int]:
        with self._lock:
            rows = self._conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        found = {str(s): int(n) for s, n in rows}
        return {s: found.get(s, 0) for s in STATES}

    def check_writable(self) -> str | None:
        """None if a write transaction can be taken, else a one-line reason."""
        try:
            with self._tx() as cur:
                cur.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('ready_check', ?)",
                    (str(time.time()),),
                )
        except sqlite3.Error as exc:
            return f"database not writable: {exc}"
        return None

