"""What a reviewer knows besides the diff: the change's intent, in its author's words (the
merge/pull request's title and description, the commit messages of the reviewed range, the
issues it says it closes), the repository's rules (its AGENTS.md), and the team's scanners'
results on its lines.

Both are capped in size so that they never crowd out the diff: the title to one line, the
description, the commit messages and AGENTS.md to a few thousand characters each. The intent
is untrusted data (the author wrote it); AGENTS.md comes from the target branch in forge mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from reviewbot.rules import Rule
from reviewbot.scanners import ScannerResult

MAX_TITLE = 300
MAX_DESCRIPTION = 4000
MAX_COMMITS = 30
MAX_COMMIT = 500
MAX_COMMITS_TOTAL = 3000
MAX_AGENTS_MD = 6000
AGENTS_MD = "AGENTS.md"
MAX_ISSUES = 5
MAX_UNREAD_NAMED = 5  # files named in the note on context the forge could not give
MAX_ISSUE_BODY = 3000
CUT = " … (cut)"


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit - len(CUT)].rstrip() + CUT


@dataclass(frozen=True)
class Intent:
    title: str = ""
    description: str = ""
    commits: tuple[str, ...] = ()  # messages, oldest first

    def capped(self) -> Intent:
        """Within the size caps (the title on one line; the latest commits kept when there
        are too many, since they say what the change came to)."""
        commits: list[str] = []
        total = 0
        for message in reversed(self.commits[-MAX_COMMITS:]):
            message = _cut(message, MAX_COMMIT)
            if not message or total + len(message) > MAX_COMMITS_TOTAL:
                continue
            commits.insert(0, message)
            total += len(message)
        return Intent(_cut(" ".join(self.title.split()), MAX_TITLE),
                      _cut(self.description, MAX_DESCRIPTION), tuple(commits))


@dataclass(frozen=True)
class LinkedIssue:
    """An issue of the change's own project that the change says it closes (untrusted: anyone
    who may open an issue wrote it)."""

    ref: str  # `#12`
    title: str
    body: str = ""

    def capped(self) -> LinkedIssue:
        return replace(self, title=_cut(" ".join(self.title.split()), MAX_TITLE),
                       body=_cut(self.body, MAX_ISSUE_BODY))


# a file's text at the head of the change (None when it has none): for the code around a hunk
HeadFiles = Callable[[str], "str | None"]


@runtime_checkable
class PartialFiles(Protocol):
    """Head files read one by one (the forge's): which of those asked for could not be read."""

    def unread(self) -> list[str]: ...


# definitions of names in the head tree: (names, a reader of head files' lines) -> definitions
Finder = Callable[[list[str], Callable[[str], "list[str] | None"]], list[Any]]


@dataclass(frozen=True)
class Context:
    intent: Intent = Intent()
    agents_md: str = ""  # the repository's AGENTS.md: the target branch's in forge mode
    files: HeadFiles | None = None
    definitions: Finder | None = None  # reviewbot.engine.definitions.git_finder on the head tree
    guidance: tuple[Rule, ...] = ()  # the project's learnings (reviewbot.conversation)
    notes: tuple[str, ...] = ()  # for the summary: context that could not be gathered, and why
    issues: tuple[LinkedIssue, ...] = ()  # the issues the change closes, of its own project
    scanner: tuple[ScannerResult, ...] = ()  # the team's scanners' results (--sarif-in)

    def notes_after(self) -> tuple[str, ...]:
        """The notes, with the head files the review asked for and could not have (known only
        once it ran)."""
        unread: list[str] = self.files.unread() if isinstance(self.files, PartialFiles) else []
        if not unread:
            return self.notes
        over = len(unread) - MAX_UNREAD_NAMED
        more = f" and {over} more" if over > 0 else ""
        named = ", ".join(unread[:MAX_UNREAD_NAMED])
        note = (f"the code around {len(unread)} file(s) could not be read from the forge "
                f"({named}{more}): their diff was reviewed without it")
        return (*self.notes, note)

    def capped(self) -> Context:
        return replace(self, intent=self.intent.capped(),
                       agents_md=_cut(self.agents_md, MAX_AGENTS_MD),
                       issues=tuple(i.capped() for i in self.issues[:MAX_ISSUES]))
