"""What the team told the bot, kept per project: each dismissal of a finding (a member's
`ignore`, or a rebuttal the model accepted) becomes a short rule, applied to later reviews of
the same project's matching files like a `[[rules]]` entry, and visible and removable
(`reviewbot learnings`). Stored in the listener's SQLite database, beside the queue.

A learning's text is derived from untrusted text (a person's reply, the model's summary of
it): it is capped here and quoted wherever it is applied, and a project's learnings never reach
another project's prompts (every query is by project).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reviewbot.errors import UsageError
from reviewbot.modeltext import clean
from reviewbot.rules import Rule

MAX_TEXT = 300
APPLIED = 20  # newest first, per review

_SCHEMA = """
CREATE TABLE IF NOT EXISTS learnings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    project    TEXT    NOT NULL,
    text       TEXT    NOT NULL,
    paths      TEXT    NOT NULL,
    category   TEXT    NOT NULL DEFAULT '',
    author     TEXT    NOT NULL DEFAULT '',
    source     TEXT    NOT NULL DEFAULT '',
    created_at REAL    NOT NULL
);
CREATE INDEX IF NOT EXISTS learnings_by_project ON learnings (project, id);
"""


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
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @classmethod
    def open(cls, path: Path) -> LearningStore:
        if not path.parent.is_dir():
            raise UsageError(f"--db {path}: the directory {path.parent} does not exist")
        try:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                                   timeout=5)
            conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise UsageError(f"cannot open the learnings in {path}: {exc}") from None
        return cls(conn)

    def add(self, project: str, text: str, paths: tuple[str, ...], category: str = "",
            author: str = "", source: str = "") -> int:
        text = clean(text, MAX_TEXT)
        cur = self._conn.execute(
            "INSERT INTO learnings (project, text, paths, category, author, source, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (project, text, json.dumps(list(paths)), category[:40], author[:100], source[:200],
             time.time()))
        return int(cur.lastrowid or 0)

    def list(self, project: str) -> list[Learning]:
        rows = self._conn.execute(
            "SELECT id, project, text, paths, category, author, source, created_at"
            " FROM learnings WHERE project = ? ORDER BY id DESC", (project,)).fetchall()
        return [Learning(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7])
                for r in rows]

    def get(self, project: str, learning_id: int) -> Learning | None:
        return next((x for x in self.list(project) if x.id == learning_id), None)

    def remove(self, project: str, learning_id: int) -> bool:
        cur = self._conn.execute("DELETE FROM learnings WHERE project = ? AND id = ?",
                                 (project, learning_id))
        return cur.rowcount > 0

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
