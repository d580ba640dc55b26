"""What answering a note did, and the hooks it reports dismissals and outcomes through."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from reviewbot.conversation.learnings import FindingOutcome
from reviewbot.discussion import Note, Thread

Learn = Callable[[Thread, Note, str, str], None]  # (thread, note, text, category)
Tally = Callable[[Thread, FindingOutcome], None]  # what became of the thread's finding
HEADING = re.compile(r"\*\*\w+\*\* \((?P<category>[\w-]+)\): (?P<title>[^\n]+)")


def dismissed(thread: Thread) -> tuple[str, str]:
    """A learning's default text and category, from the heading of the bot's finding."""
    found = HEADING.search(thread.notes[0].body if thread.notes else "")
    title = found["title"].strip() if found else "this finding"
    return (f"Do not raise \"{title}\" on these files: a project member dismissed it.",
            found["category"] if found else "")


class Action(StrEnum):
    """What answering a note did."""

    NOT_ADDRESSED = "not-addressed"
    NOT_A_MEMBER = "not-a-member"
    ANSWERED_BEFORE = "answered-before"
    HELP = "help"
    AUTHOR_REFUSED = "author-refused"
    EDITED_REFUSED = "edited-refused"
    IGNORED = "ignored"
    PAUSE = "pause"
    RESUME = "resume"
    PUBLISHED = "published"
    REVIEWED = "reviewed"
    ANSWERED = "answered"
    LIMIT = "limit"
    DISMISSED = "dismissed"
    DISMISSED_BEFORE = "dismissed-before"
    VOTED = "voted"


@dataclass(frozen=True)
class Response:
    action: Action
    detail: str = ""
