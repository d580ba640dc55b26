"""A member's commands to the bot (`help`, `ignore`, `pause`, `resume`, `publish`, `review`),
one function each, found through `DO`; questions are answered in reviewbot.conversation.respond."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from reviewbot.conversation.learnings import FindingOutcome
from reviewbot.conversation.notes import HELP, Command
from reviewbot.conversation.verdicts import Action, Learn, Response, Tally, dismissed
from reviewbot.discussion import Note, Thread, Threads
from reviewbot.errors import UsageError
from reviewbot.forges.markers import ReplyMarker
from reviewbot.modeltext import inline


@dataclass(frozen=True)
class Asked:
    """A member's command, and what doing it needs."""

    threads: Threads
    note: Note
    thread: Thread
    mark: str  # ends every reply: which note it answers
    review: Callable[[], str]
    learn: Learn
    tally: Tally


def _help(a: Asked) -> Response:
    a.threads.reply(a.thread, HELP + a.mark)
    return Response(Action.HELP)


def _ignore(a: Asked) -> Response:  # the reply last: it marks the note answered (kill -9 safe)
    a.learn(a.thread, a.note, *dismissed(a.thread))
    a.tally(a.thread, FindingOutcome.DISMISSED)
    a.threads.resolve(a.thread)
    a.threads.reply(a.thread, "Withdrawn at a member's request: I will not raise this finding "
                    "again on this merge request.\n\n"
                    + ReplyMarker(a.note.id, dismissed=True).render())
    return Response(Action.IGNORED, a.thread.fingerprint or "")


def _switch(paused: bool) -> Callable[[Asked], Response]:
    def switch(a: Asked) -> Response:
        a.threads.set_paused(paused)
        a.threads.reply(a.thread, ("Paused: I will not review this merge request on new pushes "
                                   "until a member says `resume`." if paused else
                                   "Resumed: I will review new pushes again.") + a.mark)
        return Response(Action.PAUSE if paused else Action.RESUME)
    return switch


def _publish(a: Asked) -> Response:
    try:
        count = a.threads.publish()
    except UsageError as exc:  # not for a retry: the member has something to do first
        a.threads.reply(a.thread, f"Not published: {inline(exc.message)}" + a.mark)
        return Response(Action.PUBLISHED, "refused")
    a.threads.reply(a.thread, (f"Published the {count} finding(s) that waited for approval."
                               if count else "Nothing waits to be published.") + a.mark)
    return Response(Action.PUBLISHED, str(count))


def _review(a: Asked) -> Response:
    outcome = a.review()
    a.threads.reply(a.thread, f"Reviewed the current head in full: {outcome}" + a.mark)
    return Response(Action.REVIEWED, outcome)


DO: dict[Command, Callable[[Asked], Response]] = {
    Command.HELP: _help, Command.IGNORE: _ignore, Command.PAUSE: _switch(True),
    Command.RESUME: _switch(False), Command.PUBLISH: _publish, Command.REVIEW: _review}
