"""What a project's database keeps of a change's review: the learnings its members'
dismissals make, and what became of each finding the bot posted (docs/conversation.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from reviewbot.conversation.learnings import FindingOutcome, LearningStore, scope, tally_line
from reviewbot.discussion import Note, Thread
from reviewbot.errors import ForgeError
from reviewbot.forges import registry
from reviewbot.forges.base import ChangeRequest, Forge, Keyed, PostedComment, PostOutcome, Target
from reviewbot.rules import Rule

MAX_COMPARED_HEADS = 5  # per review: one compare request each


class Ran(Protocol):
    """What `Memory.record` reads of a run (reviewbot.flow.posting.ForgeRun)."""

    @property
    def request(self) -> ChangeRequest: ...

    @property
    def outcome(self) -> PostOutcome: ...

    @property
    def to_resolve(self) -> list[PostedComment]: ...

    @property
    def existing(self) -> list[PostedComment]: ...

    @property
    def author_may_dismiss(self) -> bool: ...


@dataclass
class Memory:
    """What a project's database keeps of one change: the learnings its members'
    dismissals make, and what became of each finding the bot posted (docs/conversation.md).
    Without a database (CI), nothing."""

    target: Target
    approval: bool  # the team approves a learning before it applies (learnings_need_approval)
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
        return tally_line(self.store.tally(key).get(key, {o: 0 for o in FindingOutcome}))

    def learn(self, thread: Thread, note: Note, text: str, category: str) -> None:
        if self.store and self.key:
            self.store.add(self.key, text, scope(thread.path), category, note.author,
                           f"{registry.ref(self.target)} thread {thread.id}",
                           approved=not self.approval)

    def tally(self, thread: Thread, outcome: FindingOutcome) -> None:
        if self.store and self.key and thread.fingerprint:
            self.store.record(self.key, registry.ref(self.target), [thread.fingerprint], outcome)

    def record(self, run: Ran) -> None:
        """Posted findings are open; those the bot resolved because the code changed and the
        model did not raise them again are accepted (fixed by a later push); a thread a person
        resolved without a word is accepted when its file changed since, else dismissed."""
        if not (self.store and self.key):
            return
        ref = registry.ref(self.target)
        self.store.record(self.key, ref, [f.fingerprint for f in run.outcome.posted],
                          FindingOutcome.OPEN)
        self.store.record(self.key, ref, [c.fingerprint for c in run.to_resolve],
                          FindingOutcome.ACCEPTED)
        # a thread only the author resolved is no verdict of the team's (it still gates)
        closed = [c for c in run.existing if c.resolved_by_person and not c.dismissed
                  and not c.counted_though_resolved(run.author_may_dismiss)]
        undecided = self.store.undecided(self.key, ref, [c.fingerprint for c in closed])
        changed = ChangedSince(self.forge, run.request)
        for c in closed:
            if c.fingerprint in undecided and (touched := changed(c)) is not None:
                self.store.record(self.key, ref, [c.fingerprint],
                                  FindingOutcome.ACCEPTED if touched else FindingOutcome.DISMISSED)


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
