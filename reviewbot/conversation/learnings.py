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

import enum
import glob
import json
import time
from dataclasses import dataclass
from pathlib import Path

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
    approved: bool = True  # False: waits for `reviewbot learnings approve`, applies to nothing

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "project": self.project, "text": self.text,
                "paths": list(self.paths), "category": self.category, "author": self.author,
                "source": self.source, "created_at": self.created_at, "approved": self.approved}

    def guidance(self) -> str:
        """The rule's text: the team's words, for findings of the dismissed one's category."""
        about = f" on {self.category} findings" if self.category else ""
        return f"The team's guidance{about} (learned from a dismissed finding): {self.text}"


def scope(path: str) -> tuple[str, ...]:
    """Where a dismissal applies: the finding's own file (a dismissal is about that code, not
    the project: one thread cannot set a rule for every file)."""
    return (glob.escape(path),) if path else ()


class FindingOutcome(enum.Enum):
    """What became of a finding the bot posted."""

    OPEN = "open"
    ACCEPTED = "accepted"  # fixed by a later push, `fixed` in its thread, or a member's 👍
    DISMISSED = "dismissed"  # `ignore`, a rebuttal the bot accepted, or a member's 👎


TALLY_DAYS = 30


def tally_line(counts: dict[FindingOutcome, int], days: float = TALLY_DAYS) -> str:
    """`41 findings accepted, 9 dismissed, 3 open in 30 days` ("" with none)."""
    if not any(counts.values()):
        return ""
    return (f"{counts[FindingOutcome.ACCEPTED]} findings accepted, {counts[FindingOutcome.DISMISSED]} "
            f"dismissed, {counts[FindingOutcome.OPEN]} open in {days:g} days")


class LearningStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def open(cls, url: str | Path) -> LearningStore:
        """The listener's database by URL or path (beside a running listener: not exclusive)."""
        return cls.of(open_database(str(url)))

    @classmethod
    def of(cls, db: Database) -> LearningStore:
        """The store on `db`, its schema brought up to date."""
        migrate(db)
        return cls(db)

    def add(self, project: str, text: str, paths: tuple[str, ...], category: str = "",
            author: str = "", source: str = "", approved: bool = True) -> int:
        text = clean(text, MAX_TEXT)
        with self._db.tx() as tx:
            known = tx.execute("SELECT id FROM learnings WHERE project = ? AND source = ?",
                               (project, source[:200])).fetchone() if source else None
            if known is not None:  # the same dismissal again (a retried job): kept once
                return int(known[0])
            row = tx.execute(
                "INSERT INTO learnings (project, text, paths, category, author, source,"
                " created_at, approved) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (project, text, json.dumps(list(paths)), category[:40], author[:100],
                 source[:200], time.time(), int(approved))).fetchone()
        return int(row[0])

    def name(self, project: str, names: tuple[str, ...]) -> None:
        """Other names of `project` (GitLab's `group/app` for its id), for `resolve`."""
        with self._db.tx() as tx:
            for name in {n.lower() for n in names if n and n != project}:
                tx.execute("INSERT INTO project_names (name, project) VALUES (?, ?) ON CONFLICT"
                           " (name) DO UPDATE SET project = excluded.project", (name, project))

    def resolve(self, name: str) -> str:
        """The key a project's learnings are kept under, by any name it was seen with."""
        with self._db.read() as tx:
            row = tx.execute("SELECT project FROM project_names WHERE name = ?",
                             (name.lower(),)).fetchone()
        return str(row[0]) if row else name

    def record(self, project: str, change: str, fingerprints: list[str],
               outcome: FindingOutcome) -> None:
        """What became of these posted findings of `change` (`!7`, `#7`): the latest word."""
        now = time.time()
        with self._db.tx() as tx:
            for fp in dict.fromkeys(f for f in fingerprints if f):
                tx.execute("INSERT INTO finding_outcomes (project, change, fingerprint, outcome,"
                           " at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (project, change,"
                           " fingerprint) DO UPDATE SET outcome = excluded.outcome,"
                           " at = excluded.at", (project, change, fp, outcome.value, now))

    def undecided(self, project: str, change: str, fingerprints: list[str]) -> set[str]:
        """Those of `fingerprints` with no word yet beyond `open` (or none recorded)."""
        with self._db.read() as tx:
            decided = {str(r[0]) for r in tx.execute(
                "SELECT fingerprint FROM finding_outcomes WHERE project = ? AND change = ?"
                " AND outcome <> ?", (project, change, FindingOutcome.OPEN.value)).fetchall()}
        return {f for f in fingerprints if f and f not in decided}

    def tally(self, project: str | None = None, days: float = TALLY_DAYS
              ) -> dict[str, dict[FindingOutcome, int]]:
        """Per project, the findings whose latest word came in the last `days`, by outcome."""
        where, args = ("AND project = ?", (project,)) if project is not None else ("", ())
        with self._db.read() as tx:
            rows = tx.execute(f"SELECT project, outcome, COUNT(*) FROM finding_outcomes"
                              f" WHERE at >= ? {where} GROUP BY project, outcome",
                              (time.time() - days * 86400, *args)).fetchall()
        out: dict[str, dict[FindingOutcome, int]] = {}
        for name, outcome, count in rows:
            if outcome in {o.value for o in FindingOutcome}:
                out.setdefault(str(name), {o: 0 for o in FindingOutcome})[FindingOutcome(outcome)] = int(count)
        return out

    def list(self, project: str) -> list[Learning]:
        with self._db.read() as tx:
            found = tx.execute(
                "SELECT id, project, text, paths, category, author, source, created_at, approved"
                " FROM learnings WHERE project = ? ORDER BY id DESC", (project,)).fetchall()
        return [Learning(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], r[5], r[6], r[7],
                         bool(r[8])) for r in found]

    def approve(self, project: str, learning_id: int) -> bool:
        with self._db.tx() as tx:
            return tx.execute("UPDATE learnings SET approved = 1 WHERE project = ? AND id = ?",
                              (project, learning_id)).rowcount > 0

    def get(self, project: str, learning_id: int) -> Learning | None:
        return next((x for x in self.list(project) if x.id == learning_id), None)

    def remove(self, project: str, learning_id: int) -> bool:
        with self._db.tx() as tx:
            return tx.execute("DELETE FROM learnings WHERE project = ? AND id = ?",
                              (project, learning_id)).rowcount > 0

    def rules(self, project: str) -> tuple[Rule, ...]:
        """The newest APPLIED approved learnings as rules, worded as the team's guidance."""
        approved = [x for x in self.list(project) if x.approved and x.paths]
        return tuple(Rule(x.paths, x.guidance()) for x in approved[:APPLIED])


def export_toml(learnings: list[Learning], table: str = "rules") -> str:
    """`[[rules]]` tables (`[[reviewbot.rules]]` for a file in the `[reviewbot]` form) for a
    `.reviewbot.toml`, for teams that review only in CI; approved learnings only."""
    out = []
    for x in reversed([x for x in learnings if x.approved and x.paths]):
        out += [f"# learning {x.id}: {one_line(x.source)} by {one_line(x.author)}",
                f"[[{table}]]", f"paths = [{', '.join(toml_string(p) for p in x.paths)}]",
                f"text = {toml_string(x.guidance())}", ""]
    return "\n".join(out)


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML wants DEL escaped and
    any character written as itself (JSON's surrogate pairs are no TOML)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def one_line(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)
