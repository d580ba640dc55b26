"""What a change means to do, in its author's words: the merge/pull request's title and
description and the commit messages of the reviewed range.

Untrusted data for the prompt, capped in size so that it never crowds out the diff: the title
to one line, the description and the commit messages to a few thousand characters each.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_TITLE = 300
MAX_DESCRIPTION = 4000
MAX_COMMITS = 30
MAX_COMMIT = 500
MAX_COMMITS_TOTAL = 3000
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
