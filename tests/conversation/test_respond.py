"""respond() and votes() in memory: a forge's threads as a plain object, no HTTP, no model.
What the bot does for each kind of note, who may command it, and that it does each thing once.
The paths through the fake forges over HTTP are in tests/forges/{gitlab,github}/test_threads.py;
the model's answers in test_listener_notes.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import pytest

from reviewbot import config
from reviewbot.config import Settings
from reviewbot.conversation.learnings import FindingOutcome
from reviewbot.conversation.respond import respond, votes
from reviewbot.conversation.verdicts import Action, Response
from reviewbot.diff import ChangeSet
from reviewbot.discussion import Note, Thread
from reviewbot.errors import UsageError
from reviewbot.forges.markers import ReplyMarker, reply_marker

BOT, AUTHOR, MEMBER, GUEST = 1, 2, 3, 4
LOGINS = {BOT: "reviewbot", AUTHOR: "alice", MEMBER: "bob", GUEST: "eve"}
ACCESS = {BOT: 40, AUTHOR: 30, MEMBER: 30, GUEST: 10}
FINDING = Note(100, BOT, "reviewbot", "**major** (bug): the loop never ends")


@dataclass
class MemoryThreads:
    """The Threads protocol over one thread, recording every write in order."""

    thread: Thread
    reactions_on: list[tuple[int, str, str]] = field(default_factory=list)
    refuse_publish: str = ""
    writes: list[tuple[str, str]] = field(default_factory=list)

    def me(self) -> tuple[int, str]:
        return BOT, LOGINS[BOT]

    def find(self, note_id: int) -> tuple[Note, Thread]:
        return next(n for n in self.thread.notes if n.id == note_id), self.thread

    def access_level(self, user_id: int) -> int:
        return ACCESS[user_id]

    def head_sha(self) -> str:
        return "b" * 40

    def change_author(self) -> int:
        return AUTHOR

    def file_at(self, path: str, ref: str) -> str | None:
        return None

    def reply(self, thread: Thread, body: str) -> None:
        self.writes.append(("reply", body))

    def resolve(self, thread: Thread) -> None:
        self.writes.append(("resolve", thread.id))

    def acknowledge(self, note: Note) -> None:
        self.writes.append(("acknowledge", str(note.id)))

    def reactions(self, note: Note) -> list[tuple[int, str, str]]:
        return self.reactions_on

    def changes(self) -> ChangeSet:
        raise AssertionError("no question about the change is asked here")

    def set_paused(self, paused: bool) -> None:
        self.writes.append(("paused", str(paused)))

    def publish(self) -> int:
        if self.refuse_publish:
            raise UsageError(self.refuse_publish)
        self.writes.append(("publish", ""))
        return 2


def _settings(**values: object) -> Settings:
    return config.resolve(dict(values), env={}, config_path="/dev/null")


def _bot_thread(*notes: Note) -> Thread:
    return Thread("t1", (FINDING, *notes), fingerprint="f" * 16, path="a.py", line=3,
                  head_sha="a" * 40)


def _note(author: int, body: str, note_id: int = 200) -> Note:
    return Note(note_id, author, LOGINS[author], body)


def _no_model() -> NoReturn:
    raise AssertionError("the model is not asked for this note")


def _respond(threads: MemoryThreads, note_id: int = 200, settings: Settings | None = None,
             **hooks: Any) -> Response:
    return respond(threads, note_id, settings or _settings(), _no_model,
                   lambda: "2 findings", **hooks)


def test_a_note_that_does_not_address_the_bot_gets_nothing_written() -> None:
    threads = MemoryThreads(Thread("t2", (_note(MEMBER, "looks fine to me"),)))
    assert _respond(threads).action is Action.NOT_ADDRESSED
    assert threads.writes == []


def test_a_non_member_is_counted_never_answered() -> None:
    threads = MemoryThreads(Thread("t2", (_note(GUEST, "@reviewbot pause"),)))
    response = _respond(threads)
    assert (response.action, response.detail) == (Action.NOT_A_MEMBER, "eve")
    assert threads.writes == []


def test_a_redelivered_command_is_answered_once() -> None:
    answered = _note(BOT, "Paused.\n\n" + ReplyMarker(200).render(), note_id=201)
    threads = MemoryThreads(_bot_thread(_note(MEMBER, "@reviewbot pause"), answered))
    assert _respond(threads).action is Action.ANSWERED_BEFORE
    assert threads.writes == []


def test_a_member_pauses_and_the_reply_marks_the_note_answered() -> None:
    threads = MemoryThreads(Thread("t2", (_note(MEMBER, "@reviewbot pause"),)))
    assert _respond(threads).action is Action.PAUSE
    assert [kind for kind, _ in threads.writes] == ["acknowledge", "paused", "reply"]
    assert threads.writes[1] == ("paused", "True")
    marker = reply_marker(threads.writes[-1][1])
    assert marker is not None and marker.to == 200


@pytest.mark.parametrize("command", ["pause", "ignore"])
def test_the_author_cannot_switch_off_the_review_of_their_own_change(command: str) -> None:
    threads = MemoryThreads(_bot_thread(_note(AUTHOR, f"@reviewbot {command}")))
    learned: list[str] = []
    response = _respond(threads, learn=lambda *a: learned.append(a[2]))
    assert response.action is Action.AUTHOR_REFUSED
    assert [kind for kind, _ in threads.writes] == ["acknowledge", "reply"]
    assert "author" in threads.writes[-1][1] and learned == []
    allowed = _respond(MemoryThreads(threads.thread), settings=_settings(author_commands=True))
    assert allowed.action is Action(command if command == "pause" else "ignored")


def test_ignore_learns_tallies_and_resolves_before_the_reply_that_marks_it_done() -> None:
    threads = MemoryThreads(_bot_thread(_note(MEMBER, "@reviewbot ignore")))
    learned: list[tuple[str, str]] = []
    tallied: list[FindingOutcome] = []
    response = _respond(threads, learn=lambda t, n, text, category: learned.append((text, category)),
                        tally=lambda t, outcome: tallied.append(outcome))
    assert (response.action, response.detail) == (Action.IGNORED, "f" * 16)
    text = 'Do not raise "the loop never ends" on these files: a project member dismissed it.'
    assert learned == [(text, "bug")]
    assert tallied == [FindingOutcome.DISMISSED]
    assert [kind for kind, _ in threads.writes] == ["acknowledge", "resolve", "reply"]
    marker = reply_marker(threads.writes[-1][1])
    assert marker is not None and marker.dismissed


def test_a_refused_publish_says_why_in_the_thread() -> None:
    threads = MemoryThreads(Thread("t2", (_note(MEMBER, "@reviewbot publish"),)),
                            refuse_publish="the held review was deleted")
    response = _respond(threads)
    assert (response.action, response.detail) == (Action.PUBLISHED, "refused")
    assert threads.writes[-1][1].startswith("Not published: the held review was deleted")
    published = MemoryThreads(Thread("t2", (_note(MEMBER, "@reviewbot publish"),)))
    assert _respond(published).detail == "2"
    assert ("publish", "") in published.writes


def test_review_runs_a_review_and_reports_how_it_went() -> None:
    threads = MemoryThreads(Thread("t2", (_note(MEMBER, "@reviewbot review"),)))
    response = _respond(threads)
    assert (response.action, response.detail) == (Action.REVIEWED, "2 findings")
    assert "Reviewed the current head in full: 2 findings" in threads.writes[-1][1]


def test_a_members_thumbs_down_dismisses_once_with_their_words_as_the_reason() -> None:
    said = _note(MEMBER, "this is intended: the loop ends on a signal")
    threads = MemoryThreads(_bot_thread(said), reactions_on=[(MEMBER, "bob", "-1"),
                                                             (GUEST, "eve", "-1")])
    learned: list[str] = []
    response = votes(threads, FINDING.id, _settings(), learn=lambda t, n, text, c: learned.append(text))
    assert response.action is Action.DISMISSED
    assert learned[0].endswith("Their reason: this is intended: the loop ends on a signal")
    reply = threads.writes[-1][1]
    again = MemoryThreads(replace(threads.thread, notes=(*threads.thread.notes,
                                                         _note(BOT, reply, note_id=300))),
                          reactions_on=threads.reactions_on)
    assert votes(again, FINDING.id, _settings()).action is Action.DISMISSED_BEFORE
    assert again.writes == []


def test_thumbs_up_are_counted_and_a_guests_votes_are_not() -> None:
    tallied: list[FindingOutcome] = []
    threads = MemoryThreads(_bot_thread(), reactions_on=[(MEMBER, "bob", "+1"),
                                                         (GUEST, "eve", "-1"), (BOT, "me", "-1")])
    response = votes(threads, FINDING.id, _settings(), tally=lambda t, o: tallied.append(o))
    assert (response.action, response.detail) == (Action.VOTED, "1 👍")
    assert tallied == [FindingOutcome.ACCEPTED] and threads.writes == []
