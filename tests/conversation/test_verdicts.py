"""The dismissal a member's `ignore` (or an accepted rebuttal) teaches."""

from __future__ import annotations

from reviewbot.conversation.verdicts import dismissed
from reviewbot.discussion import Note, Thread


def test_an_ignored_finding_teaches_its_title_and_category() -> None:
    bot = Note(1, 1, "bot", "**Major** (security): SQL built from input\n\nbody")
    assert dismissed(Thread("t", (bot,))) == (
        'Do not raise "SQL built from input" on these files: a project member dismissed it.',
        "security")
    assert dismissed(Thread("t", ()))[1] == ""
