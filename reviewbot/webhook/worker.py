"""The worker pool: claims queued jobs, runs them with bounded concurrency, records outcomes.

Concurrency is bounded twice: `workers` reviews at once in total (they all hit the one
vLLM backend) and `per_forge` at once per forge (forge API rate limits). A runner that
raises a retryable error (BackendError, ForgeError without a 4xx status, OSError) is
retried after `backoff_s * 2**(attempt-1)` seconds (capped) until `max_attempts`.

The dispatcher also renews the leases of the jobs it runs (every third of the lease) and
returns to the queue the jobs of processes that stopped renewing theirs. Where several
replicas share the queue (PostgreSQL), a watcher thread wakes the dispatcher when another
replica queued a job and cancels a review that another replica's event superseded.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from reviewbot.db import DatabaseError
from reviewbot.errors import BackendError, ForgeError, IncompleteReview, ReviewbotError
from reviewbot.redact import redact
from reviewbot.webhook.jobs import FailureReporter, Job, JobOutcome, ReviewRunner, State
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue

log = logging.getLogger("reviewbot.webhook")
CHECKPOINT_EVERY_S = 1.0


@dataclass(frozen=True)
class PoolLimits:
    workers: int = 2
    per_forge: int = 2
    max_attempts: int = 3
    backoff_s: float = 10.0
    backoff_max_s: float = 300.0
    shutdown_grace_s: float = 10.0

    def backoff(self, attempts: int) -> float:
        return min(self.backoff_max_s, self.backoff_s * 2.0 ** max(0, attempts - 1))


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, ForgeError):
        return exc.status is None or exc.status == 429 or exc.status >= 500
    return isinstance(exc, (BackendError, IncompleteReview, OSError))


class WorkerPool:
    def __init__(
        self,
        queue: JobQueue,
        runner: ReviewRunner,
        limits: PoolLimits,
        metrics: Metrics,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._queue = queue
        self._runner = runner
        self._limits = limits
        self._metrics = metrics
        self._clock = clock
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # notified when a job leaves _running
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._running: dict[int, tuple[Job, threading.Event, Future[JobOutcome]]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._dispatcher: threading.Thread | None = None
        self._watcher: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        requeued, failed = self._queue.recover(self._limits.max_attempts)
        if requeued or failed:
            log.warning("left running by a previous process: %d job(s) requeued, %d failed",
                        requeued, failed)
        self._executor = ThreadPoolExecutor(self._limits.workers, thread_name_prefix="review")
        self._dispatcher = threading.Thread(target=self._dispatch, name="dispatch", daemon=True)
        self._dispatcher.start()
        if self._queue.db.shared:
            self._watcher = threading.Thread(
                target=self._queue.watch, args=(self.wake, self.cancel, self._stopping),
                name="watch", daemon=True)
            self._watcher.start()

    def stop(self) -> None:
        """Stop claiming, cancel running reviews, wait `shutdown_grace_s` for them to return.

        A review still running after the grace period stays `running` in the database and
        is requeued by the next start.
        """
        self._stopping.set()
        self._wake.set()
        if self._dispatcher is not None:
            self._dispatcher.join()
        if self._watcher is not None:
            self._watcher.join(2.0)
        deadline = time.monotonic() + self._limits.shutdown_grace_s
        with self._settled:
            for _, cancel, _ in self._running.values():
                cancel.set()
            # wait for the outcomes to be recorded, not only for the runners to return
            while self._running and (left := deadline - time.monotonic()) > 0:
                self._settled.wait(left)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def wake(self) -> None:
        """A job was queued. A saturated pool is not woken (a finishing job wakes it): that
        keeps the dispatcher thread off the GIL while the listener acknowledges a burst."""
        if len(self._running) < self._limits.workers:
            self._wake.set()

    def cancel(self, job_ids: tuple[int, ...]) -> None:
        """Set the cancel event of these jobs where they run here (superseded while running,
        or their lease was lost). Claims happen under the same lock, so a job claimed here is
        in `_running` by the time anyone can ask to cancel it."""
        with self._lock:
            for job_id in job_ids:
                entry = self._running.get(job_id)
                if entry is not None:
                    entry[1].set()

    # -- dispatching ---------------------------------------------------------------------

    def _busy_forges(self) -> frozenset[str]:
        per: dict[str, int] = {}
        for job, _, _ in self._running.values():
            per[job.forge] = per.get(job.forge, 0) + 1
        return frozenset(f for f, n in per.items() if n >= self._limits.per_forge)

    def alive(self) -> bool:
        return self._dispatcher is not None and self._dispatcher.is_alive()

    def _dispatch(self) -> None:
        """Claim and launch jobs until stopped; database errors are logged and retried."""
        last_checkpoint = last_beat = time.monotonic()
        beat_every = self._queue.lease_s / 3
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                if time.monotonic() - last_checkpoint >= CHECKPOINT_EVERY_S:
                    self._queue.checkpoint()
                    last_checkpoint = time.monotonic()
                if time.monotonic() - last_beat >= beat_every:
                    self._keep_leases()
                    last_beat = time.monotonic()
                self._dispatch_once()
            except DatabaseError as exc:
                log.error("queue database error in the dispatcher: %s", exc)
                self._wake.wait(1.0)

    def _keep_leases(self) -> None:
        with self._lock:
            mine = tuple(self._running)
        lost = self._queue.heartbeat(mine, now=self._clock())
        if lost:
            log.info("job(s) %s no longer run here (superseded or taken over): stopping them",
                     ", ".join(map(str, lost)))
            self.cancel(lost)
        requeued, failed = self._queue.expire(self._limits.max_attempts, now=self._clock())
        if requeued or failed:
            log.warning("lease ran out (process gone): %d job(s) requeued, %d failed",
                        requeued, failed)

    def _dispatch_once(self) -> None:
        saturated = False
        while not self._stopping.is_set():
            with self._lock:  # held over the claim: see `cancel`
                saturated = len(self._running) >= self._limits.workers
                if saturated:
                    break
                job = self._queue.claim(self._busy_forges(), now=self._clock())
                if job is None:
                    break
                future = self._launch(job)
            # outside the lock: a future already done runs its callback here, and it locks
            future.add_done_callback(partial(self._settle, job))
        self._wake.wait(1.0 if saturated else self._idle_timeout())

    def _idle_timeout(self) -> float:
        """Sleep until the next retry is due (a finishing job or a new event wakes us earlier)."""
        due = self._queue.next_due()
        return 1.0 if due is None else min(1.0, max(0.01, due - self._clock()))

    def _launch(self, job: Job) -> Future[JobOutcome]:
        """Called with `_lock` held."""
        assert self._executor is not None
        cancel = threading.Event()
        future = self._executor.submit(self._runner, job, cancel)
        self._running[job.id] = (job, cancel, future)
        return future

    # -- outcomes ------------------------------------------------------------------------

    def _settle(self, job: Job, future: Future[JobOutcome]) -> None:
        with self._lock:
            _, cancel, _ = self._running[job.id]
        try:
            if future.cancelled():
                return  # executor shut down before it started: still `running`, requeued at start
            exc = future.exception()
            if exc is None:
                self._settle_outcome(job, future.result(), cancel)
            else:
                self._settle_error(job, exc)
            self._queue.release(job.id)  # a superseded review holds its change until here
        except DatabaseError as exc:  # the row stays `running` until its lease runs out
            log.error("cannot record the outcome of job %d: %s", job.id, exc)
        finally:
            with self._settled:
                del self._running[job.id]
                self._settled.notify_all()
            self._wake.set()

    def _settle_outcome(self, job: Job, outcome: JobOutcome, cancel: threading.Event) -> None:
        now = self._clock()
        if outcome.finished:
            if self._queue.finish(job.id, State.DONE, outcome.detail, now=now):
                log.info("job %d %s done: %s", job.id, _what(job), outcome.detail or "ok")
                self._metrics.reviews.labels("done").inc()
                self._metrics.job_latency.labels("done").observe(now - job.received_at)
            return
        if not cancel.is_set():
            self._fail(job, "the runner cancelled the review by itself", now)
        elif self._stopping.is_set():  # not superseded: finish it after the restart
            self._queue.requeue(job.id, now, "interrupted by shutdown", count_attempt=False)
        # otherwise superseded: the queue already records it

    def _settle_error(self, job: Job, exc: BaseException) -> None:
        now = self._clock()
        reason = redact(" ".join(f"{type(exc).__name__}: {exc}".split()))
        if not isinstance(exc, ReviewbotError | OSError):  # a bug: keep the traceback, redacted
            trace = redact("".join(traceback.format_exception(exc)))
            log.error("review of job %d crashed:\n%s", job.id, trace)
        attempts = self._queue.attempts(job.id)
        if is_retryable(exc) and attempts < self._limits.max_attempts and not self._stopping.is_set():
            delay = self._limits.backoff(attempts)
            if self._queue.requeue(job.id, now + delay, f"attempt {attempts} failed: {reason}"):
                log.warning("job %d %s: attempt %d failed, retried in %.0f s: %s", job.id,
                            _what(job), attempts, delay, reason)
                self._metrics.reviews.labels("retried").inc()
            return
        if is_retryable(exc) and self._stopping.is_set():
            self._queue.requeue(job.id, now, f"attempt {attempts} failed: {reason}")
            return
        self._fail(job, f"after {attempts} attempt(s): {reason}", now)

    def _fail(self, job: Job, reason: str, now: float) -> None:
        if self._queue.finish(job.id, State.FAILED, reason, now=now):
            log.error("job %d %s failed: %s", job.id, _what(job), reason)
            self._metrics.reviews.labels("failed").inc()
            self._metrics.job_latency.labels("failed").observe(now - job.received_at)
            self._tell(job, reason)

    def _tell(self, job: Job, reason: str) -> None:
        """A review that failed for good is said on the change itself (its summary note)."""
        if job.note_id is not None or not isinstance(self._runner, FailureReporter):
            return
        try:
            self._runner.report_failure(job, reason)
        except (ReviewbotError, OSError) as exc:
            log.error("job %d: could not say on %s that it failed: %s", job.id, _what(job),
                      redact(str(exc)))


def _what(job: Job) -> str:
    kind = f"note {job.note_id} on" if job.note_id is not None else "review of"
    return f"({kind} {job.forge} {job.project} #{job.number} at {job.head_sha[:12]})"
