"""A change's discussions as the bot reads them from a forge: notes and the threads they form.
The forge adapters build them; the conversation and the flow read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reviewbot.diff import ChangeSet


@dataclass(frozen=True)
class Note:
    id: int
    author_id: int
    author: str  # the author's login
    body: str
    system: bool = False
    bot: bool = False  # the forge marks the author as a bot account
    # changed after it was written: its words may be someone else's than its author's (a
    # collaborator can edit another's comment), and neither forge's REST API says whose
    edited: bool = False


@dataclass(frozen=True)
class Thread:
    """A discussion: its notes oldest first, and whether the bot started it with a finding."""

    id: str
    notes: tuple[Note, ...]
    fingerprint: str | None = None  # the finding the bot's first note carries
    path: str = ""
    line: int | None = None
    head_sha: str = ""  # the head the finding was anchored at
    resolved: bool = False


class Threads(Protocol):
    """What answering a note needs from a forge: its threads, who may command the bot,
    replies, reactions and the bot's switches (forges/*/threads.py)."""

    def me(self) -> tuple[int, str]: ...  # the bot's user id and login

    def find(self, note_id: int) -> tuple[Note, Thread]: ...

    def access_level(self, user_id: int) -> int: ...  # GitLab's levels: 30 is Developer

    def head_sha(self) -> str: ...

    def change_author(self) -> int: ...  # the user id of the merge request's author

    def file_at(self, path: str, ref: str) -> str | None: ...

    def reply(self, thread: Thread, body: str) -> None: ...

    def resolve(self, thread: Thread) -> None: ...

    def acknowledge(self, note: Note) -> None: ...

    def reactions(self, note: Note) -> list[tuple[int, str, str]]: ...  # (user, login, "-1"…)

    def changes(self) -> ChangeSet: ...  # the change's diff, for a question about it

    def set_paused(self, paused: bool) -> None: ...

    def publish(self) -> int: ...  # post the findings waiting for approval: how many
