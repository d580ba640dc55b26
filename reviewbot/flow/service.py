"""One service for a merge/pull request: fetch, gather context, review, post.

Every entry point (`review --mr/--pr`, a CI job, the listener's jobs) sends it a typed order;
none of them builds another's flags. The flow itself is `reviewbot.flow.posting`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.conversation.learnings import LearningStore, Outcome, scope, tally_line
from reviewbot.conversation.respond import respond, votes
from reviewbot.conversation.verdicts import Response
from reviewbot.diff import ChangeSet
from reviewbot.discussion import Note, Thread
from reviewbot.engine.passes import Passes
from reviewbot.errors import ForgeError, ReviewbotError
from reviewbot.flow.headtree import Trees
from reviewbot.flow.posting import ForgeRun, review_change_request
from reviewbot.flow.select import open_forge
from reviewbot.forges import registry
from reviewbot.forges.base import ChangeRequest, Forge, Keyed, PostedComment, Target, Voting
from reviewbot.forges.summary import failed_summary
from reviewbot.history import Change, HistoryStore, ReviewOutcome, ReviewRecord
from reviewbot.redact import redact
from reviewbot.result import Reviewer, ReviewResult, RunMode, exit_code
from reviewbot.rules import Rule, applicable

MAX_COMPARED_HEADS = 5  # per review: one compare request each


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
            history.add(failed_record(order.target, order.source, started, str(exc)))
        raise
    if history is not None and run.mode not in UNRECORDED:
        history.add(run_record(order, started, run))
    return run, exit_code(run.complete, run.result.worst(), order.settings.fail_on)


def _review(order: ReviewOrder, reviewer: Reviewer, cancel: threading.Event | None,
            learnings: LearningStore | None, force: bool) -> ForgeRun:
    settings, forge = order.settings, order.forge
    memory = Memory(order, forge, learnings)
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
    mode = "full" if settings.approve_before_publish else settings.mode
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


def run_record(order: ReviewOrder, started: float, run: ForgeRun) -> ReviewRecord:
    """What the history keeps of a review attempt that ran."""
    r = run.request
    change = Change(r.forge, r.project, r.number, r.head_sha, r.web_url, r.title)
    if run.mode is RunMode.SUPERSEDED:
        outcome, reason = ReviewOutcome.INCOMPLETE, "a newer push arrived: nothing was posted"
    elif run.complete:
        outcome, reason = ReviewOutcome.COMPLETE, ""
    else:
        outcome = ReviewOutcome.INCOMPLETE
        reason = "; ".join(run.errors + run.result.stats.errors) \
            or "the review did not cover the whole change"
    return ReviewRecord.of(change, order.source, run.mode.value, started, outcome,
                           redact(reason), run.result, len(run.outcome.posted),
                           len(run.result.held))


def failed_record(t: Target, source: str, started: float, reason: str) -> ReviewRecord:
    """What the history keeps of a review attempt that raised (`source`: who ran it)."""
    return ReviewRecord.of(Change(t.forge, t.project, t.number),  # its page is not known
                           source, "", started, ReviewOutcome.FAILED, redact(reason))


def _take_votes(order: ReviewOrder, forge: Forge, memory: Memory) -> None:
    """GitHub sends no event for a reaction: before a review, the 👍/👎 on the bot's open
    findings are read, so a member's 👎 dismisses its finding before this review posts."""
    if isinstance(forge, Voting):
        threads = registry.kind(forge.name).threads_of(forge, None)
        for comment_id in forge.voted():
            votes(threads, comment_id, order.settings, memory.learn, memory.tally)


@dataclass
class Memory:
    """What a project's database keeps of one order's change: the learnings its members'
    dismissals make, and what became of each finding the bot posted (docs/conversation.md).
    Without a database (CI), nothing."""

    order: ReviewOrder
    forge: Forge
    store: LearningStore | None

    @cached_property
    def key(self) -> str:
        """The project's key, its other names noted on first use ("" without a database)."""
        if self.store is None or not isinstance(self.forge, Keyed):
            return ""
        key = self.forge.project_key()
        self.store.name(key, self.forge.project_names())
        return key

    def rules(self) -> tuple[Rule, ...]:
        return self.store.rules(self.key) if self.store and self.key else ()

    def line(self) -> str:
        """`41 findings accepted, 9 dismissed, 3 open in 30 days` for the summary note."""
        key = self.key
        if not (self.store and key):
            return ""
        return tally_line(self.store.tally(key).get(key, {o: 0 for o in Outcome}))

    def learn(self, thread: Thread, note: Note, text: str, category: str) -> None:
        if self.store and self.key:
            self.store.add(self.key, text, scope(thread.path), category, note.author,
                           f"{self.order.target.ref} thread {thread.id}",
                           approved=not self.order.settings.learnings_need_approval)

    def tally(self, thread: Thread, outcome: Outcome) -> None:
        if self.store and self.key and thread.fingerprint:
            self.store.record(self.key, self.order.target.ref, [thread.fingerprint], outcome)

    def record(self, run: ForgeRun) -> None:
        """Posted findings are open; those the bot resolved because the code changed and the
        model did not raise them again are accepted (fixed by a later push); a thread a person
        resolved without a word is accepted when its file changed since, else dismissed."""
        if not (self.store and self.key):
            return
        ref = self.order.target.ref
        self.store.record(self.key, ref, [f.fingerprint for f in run.outcome.posted],
                          Outcome.OPEN)
        self.store.record(self.key, ref, [c.fingerprint for c in run.to_resolve],
                          Outcome.ACCEPTED)
        # a thread only the author resolved is no verdict of the team's (it still gates)
        closed = [c for c in run.existing if c.resolved_by_person and not c.dismissed
                  and not c.counted_though_resolved(run.author_may_dismiss)]
        undecided = self.store.undecided(self.key, ref, [c.fingerprint for c in closed])
        changed = ChangedSince(self.forge, run.request)
        for c in closed:
            if c.fingerprint in undecided and (touched := changed(c)) is not None:
                self.store.record(self.key, ref, [c.fingerprint],
                                  Outcome.ACCEPTED if touched else Outcome.DISMISSED)


@dataclass
class ChangedSince:
    """Did a finding's file change between the head it was posted at and `request`'s head?
    None when that cannot be told (no head known, the forge cannot compare, too many heads)."""

    forge: Forge
    request: ChangeRequest
    heads: dict[str, set[str] | None] = field(default_factory=dict)

    def __call__(self, comment: PostedComment) -> bool | None:
        head = comment.head_sha
        if not head or head == self.request.head_sha:
            return False if head else None
        if head not in self.heads:
            if len(self.heads) >= MAX_COMPARED_HEADS:
                return None
            try:  # the review is posted already: a failed comparison leaves it undecided
                changes = self.forge.fetch_incremental(head, self.request)
            except ForgeError:
                changes = None
            self.heads[head] = (None if changes is None else
                                {p for f in changes.files for p in (f.old_path, f.new_path) if p})
        paths = self.heads[head]
        return None if paths is None else comment.path in paths


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
        full = replace(order, settings=replace(order.settings, mode="full"))
        run, code = review(full, reviewer(), learnings=learnings, force=True)
        return run.summary.split("\n", 1)[0][:300] if code != 3 else "incomplete (see the summary)"

    memory = Memory(order, forge, learnings)
    return respond(threads, note_id, order.settings, passes, full_review, memory.learn,
                   memory.tally)
