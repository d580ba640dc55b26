"""Which notes are for the bot, and what they ask (pure)."""

from __future__ import annotations

from reviewbot.conversation.notes import Note, Thread, addressed

BOT = Thread("d1", (), fingerprint="f" * 16, path="a.py", line=3)
PLAIN = Thread("d2", ())


def _ask(body: str, thread: Thread | None = PLAIN, **note: object) -> str | None:
    fields: dict[str, object] = {"id": 9, "author_id": 3, "author": "dana", "body": body, **note}
    found = addressed(Note(**fields), 1, "reviewbot", thread)  # type: ignore[arg-type]
    return found.kind if found else None


def test_only_a_mention_as_a_word_or_a_bot_thread_addresses_the_bot() -> None:
    assert _ask("@reviewbot review") == "review"
    assert _ask("@ReviewBot, help!") == "help"
    assert _ask("ping @reviewbot-old review") is None  # another account
    assert _ask("mail me at x@reviewbot.example") is None
    assert _ask("@mallory review this please") is None  # people talking to each other
    assert _ask("why is this a bug?", BOT) == "question"
    assert _ask("ignore", BOT) == "ignore"


def test_ignore_needs_a_bot_thread_and_unknown_words_get_help() -> None:
    assert _ask("@reviewbot ignore") == "help"  # nothing to withdraw outside a finding's thread
    assert _ask("@reviewbot frobnicate") == "help"
    assert _ask("@reviewbot what does this MR do?") == "help"  # questions: in its threads
    assert _ask("@reviewbot", BOT) == "help"


def test_the_bot_system_notes_and_other_bots_never_trigger_it() -> None:
    assert _ask("@reviewbot review", author_id=1) is None
    assert _ask("@reviewbot review", system=True) is None
    assert _ask("@reviewbot review", bot=True) is None
    assert _ask("why?", BOT, author_id=1) is None
