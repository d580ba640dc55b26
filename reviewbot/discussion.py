"""A change's discussions as the bot reads them from a forge: notes and the threads they form.
The forge adapters build them; the conversation and the flow read them."""

from __future__ import annotations

from dataclasses import dataclass


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
