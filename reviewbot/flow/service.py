"""One service for a merge/pull request: fetch, gather context, review, post.

Every entry point (`review --mr/--pr`, a CI job, the listener's jobs) sends it a typed order;
none of them builds another's flags. The flow itself is `reviewbot.flow.posting`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from reviewbot.choices import ReviewMode
from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.conversation.learnings import LearningStore
from reviewbot.conversation.respond import respond, votes
from reviewbot.conversation.verdicts import Response
from reviewbot.diff import ChangeSet
from reviewbot.engine.passes import Passes
from reviewbot.errors import ReviewbotError
from reviewbot.flow.headtree import Trees
from reviewbot.flow.memory import Memory
from reviewbot.flow.posting import ForgeRun, review_change_request
from reviewbot.flow.select import open_forge
from reviewbot.forges import registry
from reviewbot.forges.base import Forge, Target, Voting
from reviewbot.forges.summary import failed_summary
from reviewbot.history import Change, HistoryStore, ReviewRecord
from reviewbot.result import Reviewer, ReviewResult, RunMode, exit_code
from reviewbot.rules import applicable


@dataclass(frozen=True)
class ReviewOrder:
    """A change to review, with the settings it trusts and its forge, opened once by the entry
    point (flow.trust) and handed to every step."""

    target: Target
    settings: Settings
    forge: Forge
    dry_run: bool = False
    source: str = "cli"  # who ran it, for the history: "cli" or "listener"

    @classmethod
    def opened(cls, target: Target, settings: Settings, dry_run: bool = False,
               source: str = "cli") -> ReviewOrder:
        """An order whose forge is opened here, with these settings."""
        return cls(target, settings, open_forge(target, settings), dry_run, source)


def review(order: ReviewOrder, reviewer: Reviewer, cancel: threading.Event | None = None,
           learnings: LearningStore | None = None, force: bool = False,
           history: HistoryStore | None = None) -> tuple[ForgeRun, int]:
    """Review one MR/PR and post (or, with dry_run, only compute) the comments. A set `cancel`
    (a newer push arrived) stops before anything is posted; the project's `learnings` reach
    every chunk of its files, quoted as the team's guidance. A paused merge request is not
    reviewed unless `force` (a member's `review` command). The attempt goes into `history`
    however it ends.

    Exit code: 3 when the review or the posting is incomplete, 1 when a finding reaches
    `settings.fail_on`, else 0.
    """
    started = time.time()
    try:
        run = _review(order, reviewer, cancel, learnings, force)
    except ReviewbotError as exc:
        if history is not None:
            t = order.target
            history.add(ReviewRecord.failed(Change(t.forge, t.project, t.number), order.source,
                                            started, str(exc)))
        raise
    if history is not None and run.mode not in UNRECORDED:
        history.add(run.record(order.source, started))
    return run, exit_code(run.complete, run.result.worst(), order.settings.fail_on)


def _review(order: ReviewOrder, reviewer: Reviewer, cancel: threading.Event | None,
            learnings: LearningStore | None, force: bool) -> ForgeRun:
    settings, forge = order.settings, order.forge
    memory = Memory(order.target, order.settings.learnings_need_approval, forge, learnings)
    if not order.dry_run:
        _take_votes(order, forge, memory)
    guided = reviewer
    if memory.key:
        guidance = memory.rules()

        def guided(changes: ChangeSet, context: Context | None = None) -> ReviewResult:
            result = reviewer(changes, replace(context or Context(), guidance=guidance))
            paths = [f.path for f in changes.files]
            result.stats.learnings_applied = len(applicable(guidance, paths))
            return result

    # held findings are replaced by each review's: each must cover the whole change
    mode = ReviewMode.FULL if settings.approve_before_publish else settings.mode
    run = review_change_request(forge, guided, mode=mode, dry_run=order.dry_run,
                                cancel=cancel, fail_on_skipped=settings.fail_on_skipped,
                                force=force, trees=Trees.from_settings(settings),
                                project_line=memory.line(),
                                linked_issues=settings.linked_issues,
                                author_may_dismiss=settings.author_may_dismiss,
                                hold=settings.approve_before_publish)
    if not order.dry_run:
        memory.record(run)
    return run


UNRECORDED = (RunMode.PAUSED, RunMode.UP_TO_DATE)  # the model was not asked


def _take_votes(order: ReviewOrder, forge: Forge, memory: Memory) -> None:
    """GitHub sends no event for a reaction: before a review, the 👍/👎 on the bot's open
    findings are read, so a member's 👎 dismisses its finding before this review posts."""
    if isinstance(forge, Voting):
        threads = registry.kind(forge.name).threads_of(forge, None)
        for comment_id in forge.voted():
            votes(threads, comment_id, order.settings, memory.learn, memory.tally)


def report_failure(order: ReviewOrder, reason: str) -> None:
    """After a review's last attempt: the change's summary note says it was not reviewed, and
    why, where the team looks (the bot's state in it is kept)."""
    forge = order.forge
    forge.write_summary(forge.fetch(), failed_summary(forge.read_summary(), reason))


def answer(order: ReviewOrder, note_id: int, passes: Callable[[], Passes],
           reviewer: Callable[[], Reviewer], learnings: LearningStore | None = None,
           discussion_id: str | None = None) -> Response:
    """Do what a note on the order's merge request asks of the bot (conversation.respond):
    answer it in its thread, or run the command it gives; dismissals become `learnings`."""
    forge = order.forge
    threads = registry.kind(forge.name).threads_of(forge, discussion_id)

    def full_review() -> str:
        full = replace(order, settings=replace(order.settings, mode=ReviewMode.FULL))
        run, code = review(full, reviewer(), learnings=learnings, force=True)
        return run.summary.split("\n", 1)[0][:300] if code != 3 else "incomplete (see the summary)"

    memory = Memory(order.target, order.settings.learnings_need_approval, forge, learnings)
    return respond(threads, note_id, order.settings, passes, full_review, memory.learn,
                   memory.tally)
