"""What answering a note needs from a forge: its threads, who may command the bot, replies,
reactions and the bot's switches (forges/gitlab/threads.py, forges/github/threads.py)."""

from __future__ import annotations

from typing import Protocol

from reviewbot.diff import ChangeSet
from reviewbot.discussion import Note, Thread


class Threads(Protocol):
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
