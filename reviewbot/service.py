"""One service for a merge/pull request: fetch, gather context, review, post.

Every entry point (`review --mr/--pr`, a CI job, the listener's jobs) sends it a typed order;
none of them builds another's flags. The flow itself is `reviewbot.forges.run`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from reviewbot.config import Settings
from reviewbot.forges.base import Target
from reviewbot.forges.run import ForgeRun, review_change_request
from reviewbot.forges.select import open_forge
from reviewbot.result import Reviewer, exit_code


@dataclass(frozen=True)
class ReviewOrder:
    target: Target
    settings: Settings
    dry_run: bool = False


def review(order: ReviewOrder, reviewer: Reviewer,
           cancel: threading.Event | None = None) -> tuple[ForgeRun, int]:
    """Review one MR/PR and post (or, with dry_run, only compute) the comments. A set `cancel`
    (a newer push arrived) stops before anything is posted.

    Exit code: 3 when the review or the posting is incomplete, 1 when a finding reaches
    `settings.fail_on`, else 0.
    """
    settings = order.settings
    run = review_change_request(open_forge(order.target, settings), reviewer, mode=settings.mode,
                                dry_run=order.dry_run, cancel=cancel,
                                fail_on_skipped=settings.fail_on_skipped)
    return run, exit_code(run.complete, run.result.worst(), settings.fail_on)
