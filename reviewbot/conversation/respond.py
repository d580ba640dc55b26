"""Answering one note: who wrote it, what it asks, and the answer in its thread.

The forge is untrusted like everything a person writes: the note, the thread and the finding
are framed data in the prompt, the answer goes through the same markdown sink as findings, and
the bot's own state (which notes it answered) is read only from its own notes' markers.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from reviewbot.config import Settings
from reviewbot.conversation.commands import DO, Asked
from reviewbot.conversation.learnings import FindingOutcome
from reviewbot.conversation.notes import DISPUTED, EDITED, Command, addressed
from reviewbot.conversation.verdicts import Action, Learn, Response, Tally, dismissed
from reviewbot.discussion import Note, Thread, Threads
from reviewbot.engine.messages import Anchor
from reviewbot.engine.passes import Passes
from reviewbot.engine.tools import ReplyVerdict
from reviewbot.errors import IncompleteReview
from reviewbot.forges.markers import ReplyMarker, reply_marker
from reviewbot.modeltext import inline, prose

AROUND = 12  # lines of code shown on each side of a finding's anchor
MAX_HISTORY = 20  # the newest members' notes of a thread the model sees
MAX_NOTE_CHARS = 2_000  # of each of them
MAX_AUTHORS = 20  # whose access is looked up per answer (one request each)
MAX_REASON = 300  # characters of a 👎's reason kept in its learning
AUTHOR_ONLY = ("You wrote this change, so `{kind}` has to come from another project member: "
               "the author cannot switch off the review of their own change.")
LIMIT = ("I have answered here {n} times, which is as far as I go in one thread; a maintainer "
         "can resolve it, or reply `ignore` after mentioning me to withdraw the finding.")
VERDICT = {ReplyVerdict.KEEP: "",
           ReplyVerdict.WITHDRAW: "Withdrawn: I am resolving this thread.",
           ReplyVerdict.FIXED: "Fixed in the current code: I am resolving this thread."}


def _nothing(thread: Thread, note: Note, text: str, category: str) -> None:
    return None


def _uncounted(thread: Thread, outcome: FindingOutcome) -> None:
    return None


def respond(threads: Threads, note_id: int, settings: Settings, passes: Callable[[], Passes],
            review: Callable[[], str], learn: Learn = _nothing,
            tally: Tally = _uncounted) -> Response:
    """Do what note `note_id` asks of the bot, once. `passes` makes the model's passes (only
    when a question needs them); `review` runs a full review and says how it went; `learn`
    keeps a dismissal for later reviews of the project; `tally` counts what became of a
    finding (the project's precision as the team sees it)."""
    me_id, login = threads.me()
    note, thread = threads.find(note_id)
    if _own_finding(note, thread, me_id):
        return _voted(threads, thread, settings, me_id, learn, tally)  # reactions on it
    asked = addressed(note, me_id, login, thread)
    if asked is None:
        return Response(Action.NOT_ADDRESSED)
    if threads.access_level(note.author_id) < settings.command_min_access:
        return Response(Action.NOT_A_MEMBER, note.author)  # counted, never answered
    if any(n.author_id == me_id and _answers(n) == note.id for n in thread.notes):
        return Response(Action.ANSWERED_BEFORE)  # a redelivered event: the answer is there
    threads.acknowledge(note)
    mark = "\n\n" + ReplyMarker(note.id).render()
    by_author = note.author_id == threads.change_author()
    if asked.kind is not Command.HELP and (
            refused := _refused(note, asked.kind, by_author, settings)):
        threads.reply(thread, refused[1].format(kind=asked.kind) + mark)
        return Response(refused[0], note.author)
    if (do := DO.get(asked.kind)) is not None:
        return do(Asked(threads, note, thread, mark, review, learn, tally))
    if thread.fingerprint is None:  # a question outside its threads: about the whole change
        return _general(threads, note, asked.text, settings, passes(), mark, thread)
    # the author's words never become a rule; an edited note's may not be its author's
    return _answer(threads, note, thread, settings, passes(), me_id,
                   _nothing if by_author else learn, tally,
                   disputed=(by_author and not settings.author_may_dismiss) or note.edited)


def _refused(note: Note, kind: Command, by_author: bool,
             settings: Settings) -> tuple[Action, str] | None:
    """A command not obeyed, and the reply that says why: one edited after it was written (the
    forges do not say by whom), or the author's own `pause`/`ignore`."""
    if note.edited and kind is not Command.QUESTION:
        return Action.EDITED_REFUSED, EDITED
    if kind in (Command.PAUSE, Command.IGNORE) and by_author and not settings.author_commands:
        return Action.AUTHOR_REFUSED, AUTHOR_ONLY
    return None


def votes(threads: Threads, note_id: int, settings: Settings, learn: Learn = _nothing,
          tally: Tally = _uncounted) -> Response:
    """What the reactions on the bot's finding `note_id` ask (GitHub sends no event for them:
    a review reads them first)."""
    me_id, _ = threads.me()
    note, thread = threads.find(note_id)
    if not _own_finding(note, thread, me_id):
        return Response(Action.NOT_ADDRESSED)
    return _voted(threads, thread, settings, me_id, learn, tally)


def _own_finding(note: Note, thread: Thread, me_id: int) -> bool:
    return note.author_id == me_id and bool(thread.fingerprint) and note == thread.notes[0]


def _voted(threads: Threads, thread: Thread, settings: Settings, me_id: int,
           learn: Learn, tally: Tally) -> Response:
    """Reactions on the bot's finding: a member's 👎 dismisses it like `ignore` (the change's
    author's only with author_commands), with what they said in the thread as the reason; a 👍
    is counted, never a rule. Done once: the dismissal's reply carries its marker."""
    finding = thread.notes[0]
    if any(n.author_id == me_id and _dismisses(n) for n in thread.notes[1:]):
        return Response(Action.DISMISSED_BEFORE)
    thumbs = [(user, who, name) for user, who, name in threads.reactions(finding)
              if name in ("+1", "-1") and user != me_id]
    if not thumbs:
        return Response(Action.NOT_ADDRESSED)  # its own note, and nobody voted on it
    author, ups = threads.change_author(), 0
    for user, who, name in thumbs:
        if threads.access_level(user) < settings.command_min_access:
            continue
        if name == "+1":
            ups += 1
        elif user != author or settings.author_commands:
            text, category = dismissed(thread)
            said = [n.body for n in thread.notes[1:] if n.author_id == user]
            reason = f" Their reason: {said[-1][:MAX_REASON]}" if said else ""
            learn(thread, Note(0, user, who, "👎"), text + reason, category)
            tally(thread, FindingOutcome.DISMISSED)
            threads.resolve(thread)
            threads.reply(thread, f"Dismissed after a 👎 from {inline(who)}: I will not raise "
                          "this finding again on this merge request.\n\n"
                          + ReplyMarker(finding.id, dismissed=True).render())
            return Response(Action.DISMISSED, thread.fingerprint or "")
    if ups:
        tally(thread, FindingOutcome.ACCEPTED)
    return Response(Action.VOTED, f"{ups} 👍")


def _dismisses(note: Note) -> bool:
    marker = reply_marker(note.body)
    return marker is not None and marker.dismissed


def _general(threads: Threads, note: Note, question: str, settings: Settings, passes: Passes,
             mark: str, thread: Thread) -> Response:
    deadline = time.monotonic() + settings.request_timeout
    answer = passes.question(threads.changes(), note.author, question[:MAX_NOTE_CHARS], deadline)
    if answer is None:  # retried by the job queue, as a thread's question is
        raise IncompleteReview(f"no usable answer to note {note.id}")
    threads.reply(thread, prose(answer) + mark)
    return Response(Action.ANSWERED, "question")


def _limit_said(note: Note) -> bool:
    marker = reply_marker(note.body)
    return marker is not None and marker.limit


def _answers(note: Note) -> int | None:
    marker = reply_marker(note.body)
    return marker.to if marker else None


def _answer(threads: Threads, note: Note, thread: Thread, settings: Settings, passes: Passes,
            me_id: int, learn: Learn, tally: Tally, disputed: bool = False) -> Response:
    """The model's answer in the thread, and what becomes of the finding; `disputed`: the
    change's author argued, and a model that agrees with them does not take the finding out
    of the gate on its own (the reply says so)."""
    mine = [n for n in thread.notes[1:] if n.author_id == me_id]
    said_limit = any(_limit_said(n) for n in mine)  # by its marker: model text never has one
    if len(mine) >= settings.max_replies_per_thread or said_limit:
        if not said_limit:  # said once
            threads.reply(thread, LIMIT.format(n=len(mine)) + "\n\n"
                          + ReplyMarker(note.id, limit=True).render())
        return Response(Action.LIMIT)
    history = _history(threads, thread, note, me_id, settings.command_min_access)
    deadline = time.monotonic() + settings.request_timeout
    answer = passes.reply(_anchor(threads, thread), history, deadline)
    if answer is None:  # retried by the job queue: the note stays unanswered until then
        raise IncompleteReview(f"no usable answer to note {note.id}")
    withdrawn = answer.verdict is ReplyVerdict.WITHDRAW
    if disputed and answer.verdict is not ReplyVerdict.KEEP:
        threads.reply(thread, prose(answer.body) + f"\n\n{DISPUTED}\n\n"
                      + ReplyMarker(note.id).render())
        return Response(Action.ANSWERED, "disputed")
    if withdrawn:  # a rebuttal the model accepted: remembered
        text, category = dismissed(thread)
        learn(thread, note, answer.learning or text, category)
    if answer.verdict is not ReplyVerdict.KEEP:
        tally(thread, FindingOutcome.DISMISSED if withdrawn else FindingOutcome.ACCEPTED)
        threads.resolve(thread)
    verdict = VERDICT[answer.verdict]  # the reply last, as above
    mark = "\n\n" + ReplyMarker(note.id, dismissed=withdrawn).render()
    threads.reply(thread, prose(answer.body) + (f"\n\n{verdict}" if verdict else "") + mark)
    return Response(Action.ANSWERED, answer.verdict.value)


def _history(threads: Threads, thread: Thread, note: Note, me_id: int,
             min_access: int) -> list[tuple[str, str]]:
    """The thread up to `note` as the model sees it: the bot's and members' notes only (a
    non-member's words are data nobody vouched for: only counted), the newest MAX_HISTORY,
    each cut to MAX_NOTE_CHARS."""
    upto = [n for n in thread.notes if n.id <= note.id]
    level: dict[int, int] = {me_id: min_access, note.author_id: min_access}
    for author in dict.fromkeys(n.author_id for n in reversed(upto)):
        if author not in level and len(level) < MAX_AUTHORS + 2:
            level[author] = threads.access_level(author)
    kept = [n for n in upto if level.get(n.author_id, 0) >= min_access]
    history = [("you (reviewbot)" if n.author_id == me_id else n.author,
                n.body[:MAX_NOTE_CHARS]) for n in kept[-MAX_HISTORY:]]
    left_out = len(upto) - len(kept)
    if left_out:
        note_on = f"({left_out} note(s) by people who are not project members are not shown)"
        history.insert(0, ("reviewbot", note_on))
    return history


def _anchor(threads: Threads, thread: Thread) -> Anchor:
    head = threads.head_sha()
    text = threads.file_at(thread.path, head) if thread.path else None
    code = ""
    if text is not None and thread.line:
        lines = text.split("\n")
        first = max(1, thread.line - AROUND)
        code = "\n".join(f"{n:>5} {lines[n - 1]}"
                         for n in range(first, min(len(lines), thread.line + AROUND) + 1))
    moved = (f"line {thread.line} at {thread.head_sha[:12]}"
             if thread.head_sha and thread.head_sha != head else "")
    return Anchor(thread.notes[0].body, thread.path, thread.line, head, code, moved)
