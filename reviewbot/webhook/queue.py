"""The durable job queue, on SQLite (one listener process) or PostgreSQL (any number).

State machine (one row per accepted delivery)::

    queued ──claim──▶ running ──▶ done
      ▲  │              │  ├────▶ failed      (permanent error, or retries exhausted)
      │  │              │  └────▶ queued      (retryable error: not_before = now + backoff;
      │  │              │                      cancelled by shutdown; lease expired)
      │  └──────────────┴───────▶ superseded  (a newer push to the same MR/PR was accepted)

`enqueue` commits before the listener answers 202, so an acknowledged event survives a
crash. A claimed job carries a lease (`worker`, `lease_until`) that its process renews while
it runs (`heartbeat`); a job whose lease ran out (its process died) goes back to `queued`
(`expire`), or fails if that was its last attempt, so a review that keeps killing its process
cannot loop. With SQLite one process owns the file, so everything left `running` at start is
dead (`recover`). Reviews are therefore *at least once*; they are *exactly once* in effect
because the review posted to the forge is idempotent (fingerprinted comments are skipped when
already there) and because every transition out of `running` is conditional on the row still
being `running` under this worker's lease.

One review at a time per MR/PR: a claim skips a change while another of its reviews still
holds a lease (a superseded review keeps its lease until its worker has stopped it), and a
partial unique index keeps one waiting review per change.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from reviewbot.db import Database, DatabaseError, in_clause, open_database
from reviewbot.db.schema import migrate
from reviewbot.forges.base import ForgeName
from reviewbot.webhook.jobs import STATES, Job, JobRecord, QueuedRequest, State

_COLUMNS = (
    "id, forge, project, number, head_sha, base_url, delivery_id, received_at,"
    " state, attempts, reason, superseded_by, started_at, finished_at, note_id, worker,"
    " lease_until, discussion_id"
)
WAKE, CANCEL = "reviewbot_jobs", "reviewbot_cancel"  # notification channels
LEASE_S = 30.0


@dataclass(frozen=True)
class Enqueued:
    """The result of `enqueue`: the job, whether it was new, and the running jobs it superseded."""

    job_id: int
    created: bool
    superseded_running: tuple[int, ...] = ()
    superseded_queued: tuple[int, ...] = ()


def _record(row: Sequence[object]) -> JobRecord:
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
        discussion_id=cast("str | None", row[17]),
    )
    return JobRecord(
        job=job,
        state=State(str(row[8])),
        attempts=cast(int, row[9]),
        reason=cast(str, row[10]),
        superseded_by=cast("int | None", row[11]),
        started_at=cast("float | None", row[12]),
        finished_at=cast("float | None", row[13]),
        worker=cast("str | None", row[15]),
        lease_until=cast("float | None", row[16]),
    )


def worker_name() -> str:
    """Unique per process, readable in /jobs: host, pid and a random tail (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class JobQueue:
    """All of the queue's SQL. Thread-safe (the database serialises or pools connections)."""

    def __init__(self, db: Database, lease_s: float = LEASE_S, worker: str | None = None) -> None:
        self.db = db
        self.lease_s = lease_s
        self.worker = worker or worker_name()

    @classmethod
    def open(cls, url: str | Path, lease_s: float = LEASE_S) -> JobQueue:
        """Open (a SQLite file exclusively) and bring the schema up to date."""
        db = open_database(str(url), exclusive=True)
        try:
            migrate(db)
        except DatabaseError:
            db.close()
            raise
        return cls(db, lease_s)

    def close(self) -> None:
        self.db.close()

    # -- listener side -------------------------------------------------------------------

    def enqueue(self, req: QueuedRequest, now: float | None = None) -> Enqueued:
        """Commit a job for `req` unless its delivery was seen; supersede older jobs of the change."""
        now = time.time() if now is None else now
        with self.db.tx() as tx:
            # two replicas taking events of one change at once: one after the other
            self.db.lock(tx, f"change {req.forge} {req.project} {req.number}")
            row = tx.execute("SELECT id FROM jobs WHERE forge = ? AND delivery_id = ?",
                             (req.forge, req.delivery_id)).fetchone()
            if row is not None:
                return Enqueued(job_id=int(row[0]), created=False)
            older: list[tuple[int, str]] = []
            if req.note_id is None:  # a push supersedes the older reviews, never the notes
                older = [(int(i), str(s)) for i, s in tx.execute(
                    "SELECT id, state FROM jobs WHERE forge = ? AND project = ? AND number = ?"
                    f" AND state IN ('{State.QUEUED}', '{State.RUNNING}') AND note_id IS NULL",
                    (req.forge, req.project, req.number)).fetchall()]
            ids = [i for i, _ in older]
            if ids:  # before the insert: the partial unique index allows one waiting review
                tx.execute(f"UPDATE jobs SET state = '{State.SUPERSEDED}', finished_at = ?,"
                           f" reason = 'a newer push was received' WHERE id IN {in_clause(ids)}",
                           (now, *ids))
            new_id = int(tx.execute(
                "INSERT INTO jobs (forge, project, number, head_sha, base_url, delivery_id,"
                " received_at, note_id, discussion_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING id",
                (req.forge, req.project, req.number, req.head_sha, req.base_url,
                 req.delivery_id, now, req.note_id, req.discussion_id)).fetchone()[0])
            if ids:
                tx.execute(f"UPDATE jobs SET superseded_by = ? WHERE id IN {in_clause(ids)}",
                           (new_id, *ids))
            running = tuple(i for i, s in older if s == State.RUNNING)
            self.db.notify(tx, WAKE)
            for job_id in running:  # its worker may be another replica
                self.db.notify(tx, CANCEL, str(job_id))
        return Enqueued(job_id=new_id, created=True, superseded_running=running,
                        superseded_queued=tuple(i for i, s in older if s == State.QUEUED))

    # -- worker side ---------------------------------------------------------------------

    def recover(self, max_attempts: int, now: float | None = None) -> tuple[int, int]:
        """At start. SQLite: this process owns the file, so every job left `running` was
        interrupted by a crash. PostgreSQL: other replicas run jobs now; only the jobs whose
        lease ran out are. Returns (requeued, failed)."""
        now = time.time() if now is None else now
        return self.expire(max_attempts, now=now if self.db.shared else float("inf"))

    def expire(self, max_attempts: int, now: float | None = None) -> tuple[int, int]:
        """Jobs whose lease ran out (their process died or hung) go back to `queued`, except
        those on their last attempt: they fail. Returns (requeued, failed)."""
        now = time.time() if now is None else now
        stamp = time.time() if now == float("inf") else now
        with self.db.tx() as tx:
            failed = tx.execute(
                f"UPDATE jobs SET state = '{State.FAILED}', finished_at = ?, lease_until = NULL,"
                " reason = 'interrupted (its process died) on its last attempt'"
                f" WHERE state = '{State.RUNNING}' AND (lease_until IS NULL OR lease_until < ?)"
                " AND attempts >= ?", (stamp, now, max_attempts)).rowcount
            requeued = tx.execute(
                f"UPDATE jobs SET state = '{State.QUEUED}', started_at = NULL, lease_until = NULL,"
                " reason = 'requeued: its process stopped renewing the lease'"
                f" WHERE state = '{State.RUNNING}' AND (lease_until IS NULL OR lease_until < ?)",
                (now,)).rowcount
            # a superseded review whose process died holds its change no longer
            tx.execute("UPDATE jobs SET lease_until = NULL WHERE lease_until < ?", (now,))
            if requeued:
                self.db.notify(tx, WAKE)
        return requeued, failed

    def claim(self, busy_forges: frozenset[str] = frozenset(), now: float | None = None) -> Job | None:
        """Lease the oldest due queued job (of a forge not in `busy_forges`, of a change with
        no review running) to this worker."""
        now = time.time() if now is None else now
        skip = sorted(busy_forges)
        forge_filter = f" AND j.forge NOT IN {in_clause(skip)}" if skip else ""
        with self.db.tx() as tx:
            row = tx.execute(
                f"UPDATE jobs SET state = '{State.RUNNING}', attempts = attempts + 1, started_at = ?,"
                " worker = ?, lease_until = ? WHERE id = (SELECT j.id FROM jobs j"
                f" WHERE j.state = '{State.QUEUED}' AND j.not_before <= ?" + forge_filter +
                " AND (j.note_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM jobs r"
                " WHERE r.forge = j.forge AND r.project = j.project AND r.number = j.number"
                " AND r.note_id IS NULL AND r.lease_until IS NOT NULL))"
                " ORDER BY j.id LIMIT 1" + self.db.skip_locked + ")"
                f" RETURNING {_COLUMNS}",
                (now, self.worker, now + self.lease_s, now, *skip)).fetchone()
        return None if row is None else _record(row).job

    def heartbeat(self, job_ids: Sequence[int], now: float | None = None) -> tuple[int, ...]:
        """Renew this worker's leases; returns the jobs it no longer runs (superseded, or
        taken over after its lease ran out): their reviews must stop."""
        if not job_ids:
            return ()
        now = time.time() if now is None else now
        with self.db.tx() as tx:
            kept = {int(r[0]) for r in tx.execute(
                f"UPDATE jobs SET lease_until = ? WHERE worker = ? AND state = '{State.RUNNING}'"
                f" AND id IN {in_clause(job_ids)} RETURNING id",
                (now + self.lease_s, self.worker, *job_ids)).fetchall()}
            # a superseded review keeps holding its change until it has stopped
            tx.execute(f"UPDATE jobs SET lease_until = ? WHERE worker = ? AND state <> '{State.RUNNING}'"
                       f" AND lease_until IS NOT NULL AND id IN {in_clause(job_ids)}",
                       (now + self.lease_s, self.worker, *job_ids))
        return tuple(i for i in job_ids if i not in kept)

    def release(self, job_id: int) -> None:
        """The review has stopped: its change may be claimed again (whatever its state)."""
        with self.db.tx() as tx:
            if tx.execute("UPDATE jobs SET lease_until = NULL WHERE id = ? AND worker = ?"
                          f" AND state <> '{State.RUNNING}' AND lease_until IS NOT NULL",
                          (job_id, self.worker)).rowcount:
                self.db.notify(tx, WAKE)

    def finish(self, job_id: int, state: State, reason: str = "", now: float | None = None) -> bool:
        """Move this worker's running job to `done` or `failed`; False if it no longer runs it."""
        now = time.time() if now is None else now
        with self.db.tx() as tx:
            return tx.execute(
                "UPDATE jobs SET state = ?, reason = ?, finished_at = ?, lease_until = NULL"
                f" WHERE id = ? AND state = '{State.RUNNING}' AND worker = ?",
                (state, reason, now, job_id, self.worker)).rowcount == 1

    def requeue(self, job_id: int, not_before: float, reason: str, count_attempt: bool = True) -> bool:
        """Put this worker's running job back in the queue (retry later, or after a shutdown)."""
        with self.db.tx() as tx:
            moved = tx.execute(
                f"UPDATE jobs SET state = '{State.QUEUED}', not_before = ?, reason = ?, started_at = NULL,"
                f" lease_until = NULL, attempts = attempts - ? WHERE id = ? AND state = '{State.RUNNING}'"
                " AND worker = ?",
                (not_before, reason, 0 if count_attempt else 1, job_id, self.worker)).rowcount
            if moved:
                self.db.notify(tx, WAKE)
        return moved == 1

    def attempts(self, job_id: int) -> int:
        with self.db.read() as tx:
            row = tx.execute("SELECT attempts FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return int(row[0]) if row else 0

    def checkpoint(self) -> None:
        self.db.checkpoint()

    def next_due(self) -> float | None:
        """When the earliest queued job becomes due (None if nothing is queued)."""
        with self.db.read() as tx:
            row = tx.execute(f"SELECT MIN(not_before) FROM jobs WHERE state = '{State.QUEUED}'").fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def watch(self, wake: Callable[[], None], cancel: Callable[[tuple[int, ...]], None],
              stop: threading.Event) -> None:
        """Until `stop`: wake the workers when another replica queued a job, stop a review
        another replica superseded. Returns at once where one process owns the queue."""
        def on(channel: str, payload: str) -> None:
            if channel == CANCEL and payload.isdigit():
                cancel((int(payload),))
            else:
                wake()
        if self.db.shared:
            self.db.listen((WAKE, CANCEL), on, stop)

    # -- operator side -------------------------------------------------------------------

    def get(self, job_id: int) -> JobRecord | None:
        with self.db.read() as tx:
            row = tx.execute(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else _record(row)

    def list(self, state: State | None = None, limit: int = 100) -> list[JobRecord]:
        where, args = ("WHERE state = ?", (state,)) if state else ("", ())
        with self.db.read() as tx:
            found = tx.execute(f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY id DESC LIMIT ?",
                               (*args, limit)).fetchall()
        return [_record(r) for r in found]

    def counts(self) -> dict[State, int]:
        with self.db.read() as tx:
            found = tx.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
        by_state = {str(s): int(n) for s, n in found}
        return {s: by_state.get(s, 0) for s in STATES}

    def check_writable(self) -> str | None:
        """None if a write transaction can be taken, else a one-line reason."""
        try:
            with self.db.tx() as tx:
                tx.execute("INSERT INTO meta (key, value) VALUES ('ready_check', ?)"
                           " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                           (str(time.time()),))
        except DatabaseError as exc:
            return f"database not writable: {exc}"
        return None
