"""One service for a merge/pull request: fetch, gather context, review, post.

Every entry point (`review --mr/--pr`, a CI job, the listener's jobs) sends it a typed order;
none of them builds another's flags. The flow itself is `reviewbot.forges.run`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.conversation.learnings import LearningStore, scope
from reviewbot.conversation.notes import Note, Thread
from reviewbot.conversation.respond import Learn, Response, Threads, respond, votes
from reviewbot.diff import ChangeSet
from reviewbot.engine.passes import Passes
from reviewbot.errors import UsageError
from reviewbot.forges.base import Target
from reviewbot.forges.run import ForgeRun, review_change_request
from reviewbot.forges.select import open_forge
from reviewbot.forges.summary import failed_summary
from reviewbot.headtree import Trees
from reviewbot.result import Reviewer, ReviewResult, exit_code
from reviewbot.rules import applicable


@dataclass(frozen=True)
class ReviewOrder:
    target: Target
    settings: Settings
    dry_run: bool = False


def review(order: ReviewOrder, reviewer: Reviewer, cancel: threading.Event | None = None,
           learnings: LearningStore | None = None, force: bool = False) -> tuple[ForgeRun, int]:
    """Review one MR/PR and post (or, with dry_run, only compute) the comments. A set `cancel`
    (a newer push arrived) stops before anything is posted; the project's `learnings` reach
    every chunk of its files, quoted as the team's guidance. A paused merge request is not
    reviewed unless `force` (a member's `review` command).

    Exit code: 3 when the review or the posting is incomplete, 1 when a finding reaches
    `settings.fail_on`, else 0.
    """
    settings = order.settings
    forge = open_forge(order.target, settings)
    if not order.dry_run:
        _take_votes(order, forge, learnings)
    guided = reviewer
    if learnings is not None and isinstance(forge, Keyed):
        learnings.name(forge.project_key(), forge.project_names())
        guidance = learnings.rules(forge.project_key())

        def guided(changes: ChangeSet, context: Context | None = None) -> ReviewResult:
            result = reviewer(changes, replace(context or Context(), guidance=guidance))
            result.stats.learnings_applied = len(applicable(guidance, [f.path for f in changes.files]))
            return result

    run = review_change_request(forge, guided, mode=settings.mode, dry_run=order.dry_run,
                                cancel=cancel, fail_on_skipped=settings.fail_on_skipped,
                                force=force, trees=Trees.from_settings(settings))
    return run, exit_code(run.complete, run.result.worst(), settings.fail_on)


def _take_votes(order: ReviewOrder, forge: object, learnings: LearningStore | None) -> None:
    """GitHub sends no event for a reaction: before a review, the 👍/👎 on the bot's open
    findings are read, so a member's 👎 dismisses its finding before this review posts."""
    from reviewbot.forges.github.forge import GitHubForge

    if isinstance(forge, GitHubForge):
        threads = _threads(forge, None)
        for comment_id in forge.voted():
            votes(threads, comment_id, order.settings, _learner(order, forge, learnings))


def report_failure(order: ReviewOrder, reason: str) -> None:
    """After a review's last attempt: the change's summary note says it was not reviewed, and
    why, where the team looks (the bot's state in it is kept)."""
    forge = open_forge(order.target, order.settings)
    forge.write_summary(forge.fetch(), failed_summary(forge.read_summary(), reason))


def answer(order: ReviewOrder, note_id: int, passes: Callable[[], Passes],
           reviewer: Callable[[], Reviewer], learnings: LearningStore | None = None,
           discussion_id: str | None = None) -> Response:
    """Do what a note on the order's merge request asks of the bot (conversation.respond):
    answer it in its thread, or run the command it gives; dismissals become `learnings`."""
    forge = open_forge(order.target, order.settings)
    threads = _threads(forge, discussion_id)

    def full_review() -> str:
        full = replace(order, settings=replace(order.settings, mode="full"))
        run, code = review(full, reviewer(), learnings=learnings, force=True)
        return run.summary.split("\n", 1)[0][:300] if code != 3 else "incomplete (see the summary)"

    return respond(threads, note_id, order.settings, passes, full_review,
                   _learner(order, forge, learnings))


def _learner(order: ReviewOrder, forge: object, learnings: LearningStore | None) -> Learn:
    """How a dismissal on this order's change becomes a learning of its project."""
    def learn(thread: Thread, note: Note, text: str, category: str) -> None:
        if learnings is not None and isinstance(forge, Keyed):
            learnings.name(forge.project_key(), forge.project_names())
            learnings.add(forge.project_key(), text, scope(thread.path), category,
                          note.author, f"{order.target.ref} thread {thread.id}",
                          approved=not order.settings.learnings_need_approval)
    return learn


def _threads(forge: object, discussion_id: str | None) -> Threads:
    from reviewbot.forges.github.forge import GitHubForge
    from reviewbot.forges.github.threads import GitHubThreads
    from reviewbot.forges.gitlab.forge import GitLabForge
    from reviewbot.forges.gitlab.threads import GitLabThreads

    if isinstance(forge, GitLabForge):
        return GitLabThreads(forge, discussion_id)
    if isinstance(forge, GitHubForge):
        return GitHubThreads(forge, discussion_id)
    raise UsageError("answering comments needs a GitLab merge request or a GitHub pull request")


@runtime_checkable
class Keyed(Protocol):
    """Optional: the stable key a forge's project is known by (GitLab: its numeric id), and
    the other names people give it (GitLab: `group/app`)."""

    def project_key(self) -> str: ...

    def project_names(self) -> tuple[str, ...]: ...
