"""The history of reviews: one row for every review the listener or `reviewbot review --db`
ran, with its outcome and what it cost the model server, in the listener's database.

A row is written when a review attempt ends: complete, incomplete (with the reason; the
listener tries again, and each attempt is a row) or failed (the review raised). Every text
in it came from a forge or a model server: it is data, capped here and escaped by each
reader (the table, JSON, CSV).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from pathlib import Path

from reviewbot.db import Database, open_database
from reviewbot.db.schema import migrate
from reviewbot.modeltext import clean, one_line
from reviewbot.redact import redact
from reviewbot.result import ReviewResult

REASON_CHARS = 500
TITLE_CHARS = 300


class ReviewOutcome(StrEnum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"  # some of the change did not reach the model, or posting failed
    FAILED = "failed"  # the review raised: no result


@dataclass(frozen=True)
class Change:
    """Which review: the forge, the project, the MR/PR and the head reviewed."""

    forge: str
    project: str
    number: int
    head_sha: str = ""
    url: str = ""  # the MR/PR's web page, for links
    title: str = ""


@dataclass(frozen=True)
class ReviewRecord:
    forge: str
    project: str
    number: int
    head_sha: str
    url: str
    title: str
    source: str  # "listener" or "cli"
    mode: str  # RunMode's value, or "" where the review failed before it had one
    started_at: float
    finished_at: float
    outcome: ReviewOutcome
    reason: str = ""
    files_reviewed: int = 0
    files_total: int = 0
    lines_reviewed: int = 0  # changed lines that reached the model
    lines_changed: int = 0
    findings_posted: int = 0
    findings_held: int = 0  # found but not posted inline (below the floor or the cap)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    server_seconds: float = 0.0
    id: int = 0

    @classmethod
    def of(cls, change: Change, source: str, mode: str, started_at: float, outcome: ReviewOutcome,
           reason: str = "", result: ReviewResult | None = None, posted: int = 0,
           held: int = 0) -> ReviewRecord:
        counts: dict[str, float | int] = {}
        if result is not None:
            s = result.stats
            counts = {"files_reviewed": s.files_reviewed, "files_total": s.files_total,
                      "lines_reviewed": s.changed_lines_sent, "lines_changed": s.changed_lines,
                      "prompt_tokens": s.usage.prompt_tokens,
                      "cached_tokens": s.usage.cached_tokens,
                      "completion_tokens": s.usage.completion_tokens,
                      "server_seconds": round(s.server_seconds, 3)}
        return cls(change.forge, change.project, change.number, change.head_sha, change.url,
                   one_line(clean(change.title, TITLE_CHARS)), source, mode, started_at, time.time(), outcome,
                   one_line(clean(reason, REASON_CHARS)), findings_posted=posted,
                   findings_held=held, **counts)  # type: ignore[arg-type]

    @classmethod
    def failed(cls, change: Change, source: str, started_at: float, reason: str) -> ReviewRecord:
        """An attempt that raised (`source`: who ran it); its page is not known. The reason
        is an error's text, which may name a server's URL: redacted here, once."""
        return cls.of(change, source, "", started_at, ReviewOutcome.FAILED, redact(reason))

    @property
    def seconds(self) -> float:
        return max(0.0, self.finished_at - self.started_at)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "outcome": self.outcome.value,
                "seconds": round(self.seconds, 3)}


COLUMNS = tuple(f.name for f in fields(ReviewRecord) if f.name != "id")
USAGE_KEYS = ("project", "day")


@dataclass(frozen=True)
class ProjectUsage:
    """One line of `reviewbot usage`: what the reviews of a project (or a day) cost."""

    key: str
    reviews: int
    failed: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    server_seconds: float


class HistoryStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    @classmethod
    def open(cls, url: str | Path) -> HistoryStore:
        return cls.of(open_database(str(url)))

    @classmethod
    def of(cls, db: Database) -> HistoryStore:
        """The store on `db`, its schema brought up to date."""
        migrate(db)
        return cls(db)

    def add(self, record: ReviewRecord) -> int:
        values = tuple(getattr(record, c) for c in COLUMNS)
        with self._db.tx() as tx:
            row = tx.execute(f"INSERT INTO reviews ({', '.join(COLUMNS)}) VALUES"
                             f" ({', '.join('?' for _ in COLUMNS)}) RETURNING id",
                             values).fetchone()
        return int(row[0])

    def recent(self, project: str | None = None, since: float = 0.0,
               limit: int = 1000) -> list[ReviewRecord]:
        """The newest first."""
        where, args = self._where(project, since)
        with self._db.read() as tx:
            rows = tx.execute(f"SELECT id, {', '.join(COLUMNS)} FROM reviews{where}"
                              " ORDER BY started_at DESC, id DESC LIMIT ?",
                              (*args, limit)).fetchall()
        return [_record(row) for row in rows]

    def usage(self, by: str, project: str | None = None, since: float = 0.0) -> list[ProjectUsage]:
        """Sums per project or per day (UTC), over every row `recent` would give, summed by
        the database: one row a group comes back, however many reviews there are."""
        assert by in USAGE_KEYS
        where, args = self._where(project, since)
        # a UTC day's number; FLOOR, since PostgreSQL rounds a cast where SQLite truncates
        day = ("CAST(started_at / 86400 AS INTEGER)" if self._db.dialect == "sqlite"
               else "CAST(FLOOR(started_at / 86400) AS BIGINT)")
        key = "project" if by == "project" else day
        with self._db.read() as tx:
            rows = tx.execute(
                f"SELECT {key}, COUNT(*), SUM(CASE WHEN outcome = ? THEN 1 ELSE 0 END), "
                "SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens), "
                f"SUM(server_seconds) FROM reviews{where} GROUP BY {key}",
                (ReviewOutcome.FAILED.value, *args)).fetchall()
        out = [ProjectUsage(str(k) if by == "project" else time.strftime(
                         "%Y-%m-%d", time.gmtime(int(k) * 86400)),
                     int(n), int(failed or 0), int(p or 0), int(c or 0), int(o or 0),
                     round(float(s or 0.0), 3))
               for k, n, failed, p, c, o, s in rows]
        return sorted(out, key=lambda u: u.key)

    @staticmethod
    def _where(project: str | None, since: float) -> tuple[str, tuple[object, ...]]:
        clauses: list[str] = ["started_at >= ?"]
        args: list[object] = [since]
        if project is not None:
            clauses.append("project = ?")
            args.append(project)
        return " WHERE " + " AND ".join(clauses), tuple(args)


def _record(row: tuple[object, ...]) -> ReviewRecord:
    values = dict(zip(("id", *COLUMNS), row, strict=True))
    values["outcome"] = ReviewOutcome(str(values["outcome"]))
    return ReviewRecord(**values)  # type: ignore[arg-type]
