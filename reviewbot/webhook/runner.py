"""The production review runner, and loading a replacement runner by name (a test hook)."""

from __future__ import annotations

import importlib
import threading
from typing import cast

from reviewbot.errors import UsageError
from reviewbot.webhook.jobs import Job, Outcome, ReviewRunner


def run_review(job: Job, cancel: threading.Event) -> Outcome:
    """Review one MR/PR head through the review engine (blocking).

    Calls `reviewbot.commands.forge.review_forge_change(forge=, project=, number=,
    head_sha=, forge_url=)`, which posts the review to the forge idempotently and raises
    `ReviewbotError` subclasses on failure (`IncompleteReview` when it did not cover the
    change: retried). It returns `(ForgeRun, exit code)`; the code is kept as the detail.
    """
    if cancel.is_set():
        return Outcome.cancelled()
    try:
        from reviewbot.commands.forge import review_forge_change  # noqa: PLC0415 - lazy
    except ImportError as exc:
        raise UsageError(f"the review engine is not available: {exc}") from None
    result = review_forge_change(
        forge=job.forge,
        project=job.project,
        number=job.number,
        head_sha=job.head_sha,
        forge_url=job.base_url,
        cancel=cancel,
    )
    run = result[0] if isinstance(result, tuple) else None
    if getattr(run, "mode", None) == "superseded":
        return Outcome.cancelled("a newer push arrived during the review; nothing was posted")
    code = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    return Outcome.done("" if code is None else f"review exit code {code}")


def load_runner(spec: str | None) -> ReviewRunner:
    """`None` → `run_review`; `"module:function"` → that function (used by tests/benchmarks)."""
    if spec is None:
        return run_review
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
