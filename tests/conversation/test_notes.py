"""Which notes are for the bot, and what they ask (pure)."""

from __future__ import annotations

from reviewbot.conversation.notes import addressed
from reviewbot.discussion import Note, Thread

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


def test_a_github_app_is_mentioned_by_its_slug() -> None:
    def ask(body: str) -> str | None:
        found = addressed(Note(9, 3, "dana", body), 1, "reviewbot[bot]", PLAIN)
        return found.kind if found else None

    assert ask("@reviewbot pause") == ask("@reviewbot[bot] pause") == "pause"
    assert ask("@reviewbot[other] pause") is None and ask("@reviewbot-x pause") is None


def test_ignore_needs_a_bot_thread_and_unknown_words_get_help() -> None:
    assert _ask("@reviewbot ignore") == "help"  # nothing to withdraw outside a finding's thread
    assert _ask("@reviewbot frobnicate") == "help"
    assert _ask("@reviewbot what does this MR do?") == "question"  # about the whole change
    assert _ask("@reviewbot") == "help"
    assert _ask("@reviewbot", BOT) == "help"


def test_the_bot_system_notes_and_other_bots_never_trigger_it() -> None:
    assert _ask("@reviewbot review", author_id=1) is None
    assert _ask("@reviewbot review", system=True) is None
    assert _ask("@reviewbot review", bot=True) is None
    assert _ask("why?", BOT, author_id=1) is None


def test_note_hooks_are_queued_only_when_they_may_be_for_the_bot() -> None:
    from reviewbot.webhook.events import Accepted, Ignored, parse_gitlab

    def hook(**attrs: object) -> Accepted | Ignored:
        return parse_gitlab("Note Hook", {
            "object_kind": "note",
            "project": {"id": 42, "web_url": "https://gl.example/g/p", "path_with_namespace": "g/p"},
            "object_attributes": {"id": 77, "note": "@reviewbot review",
                                  "noteable_type": "MergeRequest", **attrs},
            "merge_request": {"iid": 7, "last_commit": {"id": "a" * 40}}})

    accepted = hook()
    assert isinstance(accepted, Accepted) and accepted.request.note_id == 77
    assert accepted.request.delivery_id == "42/note#77"  # one job per note, however redelivered
    assert isinstance(hook(noteable_type="Issue"), Ignored)
    assert isinstance(hook(system=True), Ignored)
    assert isinstance(hook(note="looks good to me"), Ignored)  # no mention, not a diff thread
    assert isinstance(hook(note="why?", type="DiffNote"), Accepted)  # maybe a bot thread


def test_emoji_hooks_queue_the_awarded_note_for_thumbs_only() -> None:
    from reviewbot.webhook.events import Accepted, Ignored, parse_gitlab

    def hook(event_type: str = "award", merge_request: object = None, **attrs: object
             ) -> Accepted | Ignored:
        return parse_gitlab("Emoji Hook", {
            "object_kind": "emoji", "event_type": event_type,
            "project": {"id": 42, "web_url": "https://gl.example/g/p", "path_with_namespace": "g/p"},
            "object_attributes": {"id": 5, "name": "thumbsdown", "awardable_type": "Note",
                                  "awardable_id": 901, "user_id": 3, **attrs},
            "note": {"id": 901, "discussion_id": "abc123", "noteable_type": "MergeRequest"},
            "merge_request": merge_request or {"iid": 7, "last_commit": {"id": "a" * 40}}})

    accepted = hook()
    assert isinstance(accepted, Accepted)
    assert (accepted.request.note_id, accepted.request.discussion_id) == (901, "abc123")
    assert accepted.request.delivery_id == "42/award#5" and accepted.request.number == 7
    assert isinstance(hook(name="thumbsup"), Accepted)
    assert isinstance(hook(name="eyes"), Ignored) and isinstance(hook("revoke"), Ignored)
    assert isinstance(hook(awardable_type="MergeRequest"), Ignored)


def test_commands_are_read_only_from_the_notes_own_words() -> None:
    """A member's quote-reply of a non-member's `@bot ignore` is no command, nor is one in
    code or an HTML comment: the note is then a question in the thread, or not for the bot."""
    assert _ask("> @reviewbot ignore\n\nDo you agree with mallory?", BOT) == "question"
    assert _ask(">>>\n@reviewbot ignore\n>>>\nthoughts?", BOT) == "question"
    assert _ask("> @reviewbot pause") is None
    assert _ask("Type `@reviewbot pause` to stop it") is None
    assert _ask("```\n@reviewbot pause\n```") is None
    assert _ask("    @reviewbot pause") is None  # an indented code block
    assert _ask("<!-- @reviewbot ignore -->\nlooks fine", BOT) == "question"
    assert _ask("<!-- @reviewbot pause -->") is None
    # the note's own words still count, however they are emphasised
    assert _ask("> quoted words\n\n**@reviewbot** pause") == "pause"
    assert _ask("> @reviewbot review\n\n@reviewbot ignore", BOT) == "ignore"
