"""What a note says to the bot, decided from the note alone (pure).

A note is for the bot only when it mentions the bot's own account (`@login`, as a word; a
GitHub App's `slug[bot]` also as `@slug`) or replies in a thread the bot started; the bot's own
notes and system notes never are. After the mention (or at the start of a reply in a bot
thread) the first word may be a command; anything else in a bot thread is a question about its
finding, a sentence elsewhere a question about the change, and a bare mention or an unknown
word the list of commands. Mentions and commands are read only from the note's own words:
never inside a quote (a quote-reply of someone else's `@bot ignore`), code, or HTML (comments
included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any

from markdown_it import MarkdownIt

from reviewbot.discussion import Note, Thread

_MAX_NOTE = 100_000  # GitLab's own limit on a note is 1,000,000 characters


class Command(StrEnum):
    """What a note asks of the bot: a command word, or a question (any other words)."""

    REVIEW = "review"
    PAUSE = "pause"
    RESUME = "resume"
    IGNORE = "ignore"
    PUBLISH = "publish"
    HELP = "help"
    QUESTION = "question"


COMMANDS = tuple(c.value for c in Command if c is not Command.QUESTION)
EDITED = ("Not done: this comment was edited after it was written, and the forge does not say "
          "by whom, so `{kind}` is obeyed only as first written. Write it in a new comment.")
DISPUTED = ("**Disputed**: this argument comes from the change's author (or from a comment "
            "edited since it was written), so the finding stays in the gate until a project "
            "member other than the author agrees (`ignore` after a mention of the bot, "
            "resolving the thread, or a thumbs-down).")
HELP = (
    "I answer questions in my threads and take these commands from project members "
    "(Developer or above), after a mention of me:\n\n"
    "- `review`: review the current head now, in full\n"
    "- `pause` / `resume`: no automatic reviews of this merge request until resumed\n"
    "- `ignore` (in one of my threads): withdraw this finding, resolve the thread, and never "
    "raise it again on this merge request\n"
    "- `publish`: post the findings that wait for approval (with `approve_before_publish`)\n"
    "- `help`: this list\n\n"
    "Anything else in one of my threads is a question about the finding, and I answer it there; "
    "a question anywhere else (after a mention) is about the whole change, and I answer it too."
)


@dataclass(frozen=True)
class Addressed:
    kind: Command
    text: str  # the note without the mention


def addressed(note: Note, me_id: int, login: str, thread: Thread | None) -> Addressed | None:
    """What `note` asks of the bot, or None when it is not for the bot."""
    if note.system or note.bot or note.author_id == me_id:
        return None  # never the bot itself, a system note or another bot: no loops
    # a GitHub App writes as `slug[bot]` and is mentioned as `@slug`
    names = "|".join(re.escape(n) for n in dict.fromkeys((login, login.removesuffix("[bot]"))))
    mention = re.compile(rf"(?<![\w@.-])@(?:{names})(?![\w\[-])", re.IGNORECASE)
    in_bot_thread = thread is not None and thread.fingerprint is not None
    own = own_words(note.body)
    found = mention.search(own)
    if found is None and not in_bot_thread:
        return None
    text = (own[found.end():] if found else own).lstrip(",.:;!? \t\n").strip()
    word = text.split(None, 1)[0].lower().strip(".,:;!?") if text else ""
    if word in COMMANDS and (word != Command.IGNORE or in_bot_thread):
        return Addressed(Command(word), text)
    # anything said in a finding's thread is a question about it; elsewhere a sentence is a
    # question about the change, and a bare mention or one unknown word gets the commands
    asks = bool(text) if in_bot_thread else len(text.split()) > 1
    return Addressed(Command.QUESTION if asks else Command.HELP, text)


# GitLab's multi-line quote: a `>>>` line, the quoted lines, a closing `>>>` line
_GITLAB_QUOTE = re.compile(r"^>>>[ \t]*\n.*?^>>>[ \t]*$", re.MULTILINE | re.DOTALL)
_QUIET = {"code_inline", "html_inline", "image"}  # inline parts whose words are not the note's


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True})


def own_words(body: str) -> str:
    """The note's own words, as a CommonMark parser reads them: quotes (`>` and GitLab's
    `>>>`), code blocks, inline code and HTML left out, one paragraph per line."""
    paragraphs: list[str] = []
    quoted = 0
    for token in _parser().parse(_GITLAB_QUOTE.sub("", body[:_MAX_NOTE])):
        quoted += {"blockquote_open": 1, "blockquote_close": -1}.get(token.type, 0)
        if token.type == "inline" and not quoted:
            paragraphs.append(_inline(token.children or []))
    return "\n".join(paragraphs)


def _inline(children: list[Any]) -> str:
    out = []
    for child in children:
        if child.type == "text":
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif child.type in _QUIET:
            out.append(" ")
    return "".join(out)
