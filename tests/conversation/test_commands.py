"""Each command word has its function."""

from __future__ import annotations

from reviewbot.conversation.commands import DO
from reviewbot.conversation.notes import COMMANDS, Command


def test_every_command_word_has_a_function_and_a_question_none() -> None:
    assert set(DO) == {Command(word) for word in COMMANDS}
    assert Command.QUESTION not in DO
