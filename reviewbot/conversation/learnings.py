"""What the team told the bot, kept per project: each dismissal of a finding (a member's
`ignore`, or a rebuttal the model accepted) becomes a short rule, applied to later reviews of
the same project's matching files like a `[[rules]]` entry, and visible and removable
(`reviewbot learnings`). Stored in the listener's database (SQLite or PostgreSQL), beside
the queue.

A learning's text is derived from untrusted text (a person's reply, the model's summary of
it): it is capped here and quoted wherever it is applied, and a project's learnings never reach
another project's prompts (every query is by project).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reviewbot.db import Database, open_database
from reviewbot.db.schema import migrate
from reviewbot.modeltext import clean
from reviewbot.rules import Rule

MAX_TEXT = 300
APPLIED = 20  # newest first, per review

@dataclass(frozen=True)
class Learning:
    id: int
    project: str
    text: str
    paths: tuple[str, ...]
    category: str
    author: str  # who dismissed the finding
    source: str  # the thread it came from
    created_at: float

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "project": self.project, "text": self.text,
                "paths": list(self.paths), "category": self.category, "author": self.author,
                "source": self.source, "created_at": self.created_at}


def scope(path: str) -> tuple[str, ...]:
    """Where a dismissal applies: the finding's folder (and below), or everything at the root."""
    folder = str(PurePosixPath(path).parent)
    return ("*",) if folder in (".", "") else (f"{folder}/*",)


class LearningStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def open(cls, url: str | Path) -> LearningStore:
        """The listener's database by URL or path (beside a running listener: not exclusive)."""
        db = open_database(str(url))
        migrate(db)
        return cls(db)

    def add(self, project: str, text: str, paths: tuple[str, ...], category: str = "",
            author: str = "", source: str = "") -> int:
        text = clean(text, MAX_TEXT)
        with self._db.tx() as tx:
            row = tx.execute(
                "INSERT INTO learnings (project, text, paths, category, author, source,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (project, text, json.dumps(list(paths)), category[:40], author[:100],
                 source[:200], time.time())).fetchone()
        return int(row[0])

    def list(self, project: str) -> list[Learning]:
        with self._db.read() as tx:
            found = tx.execute(
                "SELECT id, project, text, paths, category, author, source, created_at"
                " FROM learnings WHERE project = ? ORDER BY id DESC", (project,)).fetchall()
        return [Learning(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7])
                for r in found]

    def get(self, project: str, learning_id: int) -> Learning | None:
        return next((x for x in self.list(project) if x.id == learning_id), None)

    def remove(self, project: str, learning_id: int) -> bool:
        with self._db.tx() as tx:
            return tx.execute("DELETE FROM learnings WHERE project = ? AND id = ?",
                              (project, learning_id)).rowcount > 0

    def rules(self, project: str) -> tuple[Rule, ...]:
        """The newest APPLIED learnings as rules, worded as the team's guidance."""
        return tuple(Rule(x.paths, f"The team's guidance (learned from a dismissed finding): "
                                   f"{x.text}") for x in self.list(project)[:APPLIED])


def export_toml(learnings: list[Learning]) -> str:
    """`[[rules]]` tables for a `.reviewbot.toml` (for teams that review only in CI)."""
    out = []
    for x in reversed(learnings):
        out += [f"# learning {x.id}: {json.dumps(x.source)} by {json.dumps(x.author)}",
                "[[rules]]", f"paths = {json.dumps(list(x.paths))}",
                f"text = {json.dumps(x.text)}", ""]
    return "\n".join(out)
