"""The production review runner, built once at start-up, and the `--runner` test hook.

`ForgeRunner` takes the listener's `Trust` (reviewbot.flow.trust: flags, `REVIEWBOT_*`, its
own `.reviewbot.toml`) and, per job, the settings of that job's project (its target branch's
`.reviewbot.toml` over the listener's). The engine (model client, token counter, connection
pool) is made on the first job and reused by every job, each with its project's settings.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from reviewbot.config import Settings
from reviewbot.errors import IncompleteReview, ReviewbotError, UsageError
from reviewbot.flow.trust import Trust
from reviewbot.forges.base import Target
from reviewbot.history import Change, ReviewRecord
from reviewbot.result import Reviewer, RunMode
from reviewbot.webhook.jobs import Job, JobOutcome, ReviewRunner

if TYPE_CHECKING:
    from reviewbot.conversation.learnings import LearningStore
    from reviewbot.db import Database
    from reviewbot.engine.orchestrator import Engine
    from reviewbot.engine.passes import Passes
    from reviewbot.history import HistoryStore


class Engines:
    """One engine for every job, made when the first needs it (a backend that was down at
    the first job is tried again at the next); each job's reviews and answers with its
    project's settings. What the server decided (the concurrency) stays."""

    def __init__(self) -> None:
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    def _for(self, settings: Settings) -> Engine:
        from reviewbot.engine.build import make_engine

        with self._lock:
            if self._engine is None:
                self._engine = make_engine(settings)
            engine = self._engine
        return replace(engine, settings=replace(settings,
                                                concurrency=engine.settings.concurrency))

    def reviewer(self, settings: Settings) -> Reviewer:
        """Made when the review starts, inside the flow that records how it ended: a model
        server that is down is a failed review in the history and on the dashboard."""
        return lambda changes, context: self._for(settings).review(changes, context)

    def passes(self, settings: Settings) -> Passes:
        return self._for(settings).passes


class ForgeRunner:
    """Review one job's MR/PR head and post it; raise when the review is incomplete (retried)."""

    def __init__(self, trust: Trust, engines: Engines | None = None,
                 learnings: LearningStore | None = None,
                 history: HistoryStore | None = None) -> None:
        self._trust = trust
        self._engines = engines or Engines()
        self._learnings = learnings
        self._history = history

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        if cancel.is_set():
            return JobOutcome.cancelled()
        from reviewbot.flow import service

        # the job names its forge's URL (checked against the allowed forge URLs at intake)
        target = Target(job.forge, job.project, job.number, job.base_url)
        started = time.time()
        try:  # reads the change's target branch: an unreadable change fails here
            order = self._trust.order(target, source="listener")
        except ReviewbotError as exc:
            if self._history is not None and job.note_id is None:
                change = Change(target.forge, target.project, target.number)
                self._history.add(ReviewRecord.failed(change, "listener", started, str(exc)))
            raise
        settings = order.settings
        if job.note_id is not None:
            response = service.answer(
                order, job.note_id, lambda: self._engines.passes(settings),
                lambda: self._engines.reviewer(settings), self._learnings, job.discussion_id)
            return JobOutcome.done(f"note {job.note_id}: {response.action}")
        run, code = service.review(order, self._engines.reviewer(settings), cancel,
                                   self._learnings, history=self._history)
        if run.mode is RunMode.PAUSED:
            return JobOutcome.done("paused by a member: not reviewed")
        if run.mode is RunMode.SUPERSEDED:
            return JobOutcome.cancelled("a newer push arrived during the review; nothing was posted")
        if not run.complete:
            reason = "; ".join(run.errors + run.result.stats.errors) \
                or "the review did not cover the whole change"
            raise IncompleteReview(f"{job.forge} {job.project} #{job.number} at "
                                   f"{run.request.head_sha[:12]}: incomplete: {reason}")
        return JobOutcome.done(f"review exit code {code}")

    def report_failure(self, job: Job, reason: str) -> None:
        from reviewbot.flow import service

        target = Target(job.forge, job.project, job.number, job.base_url)
        service.report_failure(service.ReviewOrder.opened(target, self._trust.base()), reason)


def load_runner(spec: str | None, trust: Trust, db: Database | None = None) -> ReviewRunner:
    """`None` → a `ForgeRunner` (the project's learnings in `db`, the queue's database);
    `"module:function"` → that function (tests/benchmarks)."""
    if spec is None:
        from reviewbot.conversation.learnings import LearningStore
        from reviewbot.history import HistoryStore

        return ForgeRunner(trust, learnings=LearningStore(db) if db else None,
                           history=HistoryStore(db) if db else None)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--runner must look like module:function, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import runner module {module_name!r}: {exc}") from None
    runner = getattr(module, attr, None)
    if not callable(runner):
        raise UsageError(f"{spec!r} is not a callable runner")
    return cast(ReviewRunner, runner)
