"""The seam between the listener and the review engine: a `Job`, a `JobOutcome`, a `ReviewRunner`.

A runner is any callable `(job, cancel) -> JobOutcome`. It is called on a worker thread, may
block (forge + vLLM calls), should poll `cancel` between steps and return
`JobOutcome.cancelled()` soon after it is set. It reports failures by raising a
`reviewbot.errors.ReviewbotError`: `BackendError`, `IncompleteReview`, `ForgeError` with
no status, 429 or 5xx (and `OSError`) are retried with backoff; any other error fails the
job at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from reviewbot.forges.base import ForgeName


class State(StrEnum):
    """A job's state (reviewbot.webhook.queue draws the machine)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SUPERSEDED = "superseded"


STATES = tuple(State)


@dataclass(frozen=True)
class QueuedRequest:
    """What an accepted webhook event asks for, before it is a queued job."""

    forge: ForgeName
    project: str  # GitLab project id ("42") or path, or GitHub "owner/repo"
    number: int  # MR iid / PR number
    head_sha: str
    base_url: str  # e.g. "https://gitlab.example.com" or "https://api.github.com"
    delivery_id: str  # the event's key (reviewbot.webhook.events.event_key)
    note_id: int | None = None  # a note to answer (conversation); None: review the head
    discussion_id: str | None = None  # the note's discussion, as the event names it


@dataclass(frozen=True)
class Job:
    id: int
    forge: ForgeName
    project: str
    number: int
    head_sha: str
    base_url: str
    delivery_id: str
    received_at: float  # unix time
    note_id: int | None = None  # a note to answer (conversation); None: review the head
    discussion_id: str | None = None


@dataclass(frozen=True)
class JobOutcome:
    finished: bool  # False: given up because a newer push superseded it
    detail: str = ""

    @classmethod
    def done(cls, detail: str = "") -> JobOutcome:
        return cls(True, detail)

    @classmethod
    def cancelled(cls, detail: str = "") -> JobOutcome:
        return cls(False, detail)


class ReviewRunner(Protocol):
    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome: ...


@runtime_checkable
class FailureReporter(Protocol):
    """Optional for a runner: tell the change's people that its review failed for good."""

    def report_failure(self, job: Job, reason: str) -> None: ...


@dataclass(frozen=True)
class JobRecord:
    """A job and where it stands, as `GET /jobs` shows it."""

    job: Job
    state: State
    attempts: int
    reason: str
    superseded_by: int | None
    started_at: float | None
    finished_at: float | None
    worker: str | None = None  # the process that ran it last (host:pid:tag)
    lease_until: float | None = None  # while set, `worker` holds the job (and its change)

    def to_json(self) -> dict[str, object]:
        j = self.job
        return {
            "id": j.id,
            "forge": j.forge,
            "project": j.project,
            "number": j.number,
            "head_sha": j.head_sha,
            "base_url": j.base_url,
            "delivery_id": j.delivery_id,
            "received_at": j.received_at,
            "note_id": j.note_id,
            "state": self.state,
            "attempts": self.attempts,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "worker": self.worker,
            "lease_until": self.lease_until,
        }
