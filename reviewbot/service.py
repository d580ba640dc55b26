"""One service for a merge/pull request: fetch, gather context, review, post.

Every entry point (`review --mr/--pr`, a CI job, the listener's jobs) sends it a typed order;
none of them builds another's flags. The flow itself is `reviewbot.forges.run`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from reviewbot.config import Settings
from reviewbot.conversation.respond import Response, respond
from reviewbot.engine.passes import Passes
from reviewbot.errors import UsageError
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


def answer(order: ReviewOrder, note_id: int, passes: Callable[[], Passes],
           reviewer: Callable[[], Reviewer]) -> Response:
    """Do what a note on the order's merge request asks of the bot (conversation.respond):
    answer it in its thread, or run the command it gives."""
    if order.target.forge != "gitlab":
        raise UsageError("answering notes works on GitLab merge requests so far")
    from reviewbot.forges.gitlab.forge import GitLabForge
    from reviewbot.forges.gitlab.threads import GitLabThreads

    forge = open_forge(order.target, order.settings)
    assert isinstance(forge, GitLabForge)

    def full_review() -> str:
        full = replace(order, settings=replace(order.settings, mode="full"))
        run, code = review(full, reviewer())
        return run.summary.split("\n", 1)[0][:300] if code != 3 else "incomplete (see the summary)"

    return respond(GitLabThreads(forge), note_id, order.settings, passes, full_review)
