"""The production review runner, built once at start-up, and the `--runner` test hook.

`ForgeRunner` receives the review settings (resolved once, by the same resolver as the CLI:
flags, `REVIEWBOT_*`, `.reviewbot.toml`) and a way to make the engine; the engine (model
client, token counter, connection pool) is made on the first job and reused by every job.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from reviewbot.config import Settings
from reviewbot.errors import IncompleteReview, UsageError
from reviewbot.forges.base import Target
from reviewbot.result import Reviewer
from reviewbot.webhook.jobs import Job, Outcome, ReviewRunner

if TYPE_CHECKING:
    from reviewbot.conversation.learnings import LearningStore
    from reviewbot.db import Database
    from reviewbot.engine.passes import Passes


def engine_reviewer(settings: Settings) -> Reviewer:
    from reviewbot.engine.build import make_engine

    return make_engine(settings).review


class ForgeRunner:
    """Review one job's MR/PR head and post it; raise when the review is incomplete (retried)."""

    def __init__(self, settings: Settings,
                 make_reviewer: Callable[[Settings], Reviewer] = engine_reviewer,
                 learnings: LearningStore | None = None) -> None:
        self._settings = settings
        self._learnings = learnings
        self._make_reviewer = make_reviewer
        self._reviewer: Reviewer | None = None
        self._passes: Passes | None = None
        self._lock = threading.Lock()

    def reviewer(self) -> Reviewer:
        with self._lock:  # a backend that was down at the first job is tried again later
            if self._reviewer is None:
                self._reviewer = self._make_reviewer(self._settings)
            return self._reviewer

    def passes(self) -> Passes:
        """The model's passes for an answer, made when the first question needs them."""
        from reviewbot.engine.build import make_engine

        with self._lock:
            if self._passes is None:
                self._passes = make_engine(self._settings).passes
            return self._passes

    def __call__(self, job: Job, cancel: threading.Event) -> Outcome:
        if cancel.is_set():
            return Outcome.cancelled()
        from reviewbot import service

        # the job names its forge's URL (checked against the allowed forge URLs at intake)
        order = service.ReviewOrder(Target(job.forge, job.project, job.number, job.base_url),
                                    self._settings)
        if job.note_id is not None:
            response = service.answer(order, job.note_id, self.passes, self.reviewer,
                                      self._learnings, job.discussion_id)
            return Outcome.done(f"note {job.note_id}: {response.action}")
        run, code = service.review(order, self.reviewer(), cancel, self._learnings)
        if run.mode == "paused":
            return Outcome.done("paused by a member: not reviewed")
        if run.mode == "superseded":
            return Outcome.cancelled("a newer push arrived during the review; nothing was posted")
        if not run.complete:
            reason = "; ".join(run.errors + run.result.stats.errors) \
                or "the review did not cover the whole change"
            raise IncompleteReview(f"{job.forge} {job.project} #{job.number} at "
                                   f"{run.request.head_sha[:12]}: incomplete: {reason}")
        return Outcome.done(f"review exit code {code}")


    def report_failure(self, job: Job, reason: str) -> None:
        from reviewbot import service

        service.report_failure(service.ReviewOrder(
            Target(job.forge, job.project, job.number, job.base_url), self._settings),
            reason)


def load_runner(spec: str | None, settings: Settings, db: Database | None = None) -> ReviewRunner:
    """`None` → a `ForgeRunner` (the project's learnings in `db`, the queue's database);
    `"module:function"` → that function (tests/benchmarks)."""
    if spec is None:
        from reviewbot.conversation.learnings import LearningStore

        return ForgeRunner(settings, learnings=LearningStore(db) if db else None)
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
