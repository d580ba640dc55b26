"""Versioned schema migrations, applied at start by every process that opens the database.

Each backend has its own numbered list (SQLite's begins with the tables older releases created
without a version, so an existing file is brought up to date in place). `migrate` takes a lock
first (PostgreSQL: a transaction-level advisory lock; SQLite: the write lock of
`BEGIN IMMEDIATE`), so several replicas starting at once apply each step exactly once; a
database newer than this release is refused rather than written to.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from reviewbot.db.base import Database, DatabaseError, Tx


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Tx], None]


def _script(text: str) -> Callable[[Tx], None]:
    def apply(tx: Tx) -> None:
        for statement in (s.strip() for s in text.split(";")):
            if statement:
                tx.execute(statement)
    return apply


def _sqlite_note_id(tx: Tx) -> None:
    have = {row[1] for row in tx.execute("PRAGMA table_info(jobs)").fetchall()}
    if "note_id" not in have:
        tx.execute("ALTER TABLE jobs ADD COLUMN note_id INTEGER")


# One waiting review per MR/PR: what the coalescing of pushes promises, held by the database.
_ONE_WAITING = ("CREATE UNIQUE INDEX IF NOT EXISTS jobs_one_waiting ON jobs"
                " (forge, project, number) WHERE state = 'queued' AND note_id IS NULL")

# 0: waits for `reviewbot learnings approve` (learnings_need_approval); those before it apply
_APPROVED = "ALTER TABLE learnings ADD COLUMN approved INTEGER NOT NULL DEFAULT 1"
# a note job reads its one discussion by id, not every discussion of the merge request
_DISCUSSION = "ALTER TABLE jobs ADD COLUMN discussion_id TEXT"
# the names a project is known by (GitLab: `group/app` beside its numeric id), lower case
_NAMES = ("CREATE TABLE IF NOT EXISTS project_names"
          " (name TEXT PRIMARY KEY, project TEXT NOT NULL)")
# what became of each finding the bot posted: open, accepted or dismissed (the latest word)
_OUTCOMES = ("CREATE TABLE IF NOT EXISTS finding_outcomes (project TEXT NOT NULL, change TEXT"
             " NOT NULL, fingerprint TEXT NOT NULL, outcome TEXT NOT NULL, at {real} NOT NULL,"
             " PRIMARY KEY (project, change, fingerprint))")

# one row per review attempt, with its outcome and cost (reviewbot.history)
_REVIEWS = """
    CREATE TABLE IF NOT EXISTS reviews (
        id                {id},
        forge             TEXT    NOT NULL,
        project           TEXT    NOT NULL,
        number            BIGINT  NOT NULL,
        head_sha          TEXT    NOT NULL,
        url               TEXT    NOT NULL,
        title             TEXT    NOT NULL,
        source            TEXT    NOT NULL,
        mode              TEXT    NOT NULL,
        started_at        {real} NOT NULL,
        finished_at       {real} NOT NULL,
        outcome           TEXT    NOT NULL CHECK (outcome IN ('complete', 'incomplete', 'failed')),
        reason            TEXT    NOT NULL,
        files_reviewed    INTEGER NOT NULL,
        files_total       INTEGER NOT NULL,
        lines_reviewed    BIGINT  NOT NULL,
        lines_changed     BIGINT  NOT NULL,
        findings_posted   INTEGER NOT NULL,
        findings_held     INTEGER NOT NULL,
        prompt_tokens     BIGINT  NOT NULL,
        cached_tokens     BIGINT  NOT NULL,
        completion_tokens BIGINT  NOT NULL,
        server_seconds    {real} NOT NULL);
    CREATE INDEX IF NOT EXISTS reviews_by_time ON reviews (started_at);
    CREATE INDEX IF NOT EXISTS reviews_by_project ON reviews (project, started_at)"""

SQLITE = (
    Migration(1, "jobs", _script("""
        CREATE TABLE IF NOT EXISTS jobs (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            forge         TEXT    NOT NULL,
            project       TEXT    NOT NULL,
            number        INTEGER NOT NULL,
            head_sha      TEXT    NOT NULL,
            base_url      TEXT    NOT NULL,
            delivery_id   TEXT    NOT NULL,
            received_at   REAL    NOT NULL,
            state         TEXT    NOT NULL DEFAULT 'queued',
            attempts      INTEGER NOT NULL DEFAULT 0,
            not_before    REAL    NOT NULL DEFAULT 0,
            reason        TEXT    NOT NULL DEFAULT '',
            superseded_by INTEGER,
            started_at    REAL,
            finished_at   REAL,
            UNIQUE (forge, delivery_id));
        CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, not_before, id);
        CREATE INDEX IF NOT EXISTS jobs_by_change ON jobs (forge, project, number, state);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""")),
    Migration(2, "conversation jobs", _sqlite_note_id),
    Migration(3, "leases", _script(f"""
        ALTER TABLE jobs ADD COLUMN worker TEXT;
        ALTER TABLE jobs ADD COLUMN lease_until REAL;
        CREATE INDEX IF NOT EXISTS jobs_by_lease ON jobs (lease_until) WHERE lease_until IS NOT NULL;
        {_ONE_WAITING}""")),
    Migration(4, "learnings", _script("""
        CREATE TABLE IF NOT EXISTS learnings (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            project    TEXT    NOT NULL,
            text       TEXT    NOT NULL,
            paths      TEXT    NOT NULL,
            category   TEXT    NOT NULL DEFAULT '',
            author     TEXT    NOT NULL DEFAULT '',
            source     TEXT    NOT NULL DEFAULT '',
            created_at REAL    NOT NULL);
        CREATE INDEX IF NOT EXISTS learnings_by_project ON learnings (project, id)""")),
    Migration(5, "learnings awaiting approval", _script(_APPROVED)),
    Migration(6, "a note job's discussion", _script(_DISCUSSION)),
    Migration(7, "project names", _script(_NAMES)),
    Migration(8, "finding outcomes", _script(_OUTCOMES.format(real="REAL"))),
    Migration(9, "review history", _script(_REVIEWS.format(
        id="INTEGER PRIMARY KEY AUTOINCREMENT", real="REAL"))),
)

POSTGRES = (
    Migration(1, "jobs, leases and learnings", _script(f"""
        CREATE TABLE jobs (
            id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            forge         TEXT    NOT NULL,
            project       TEXT    NOT NULL,
            number        BIGINT  NOT NULL,
            head_sha      TEXT    NOT NULL,
            base_url      TEXT    NOT NULL,
            delivery_id   TEXT    NOT NULL,
            received_at   DOUBLE PRECISION NOT NULL,
            state         TEXT    NOT NULL DEFAULT 'queued',
            attempts      INTEGER NOT NULL DEFAULT 0,
            not_before    DOUBLE PRECISION NOT NULL DEFAULT 0,
            reason        TEXT    NOT NULL DEFAULT '',
            superseded_by BIGINT,
            started_at    DOUBLE PRECISION,
            finished_at   DOUBLE PRECISION,
            note_id       BIGINT,
            worker        TEXT,
            lease_until   DOUBLE PRECISION,
            UNIQUE (forge, delivery_id),
            CHECK (state IN ('queued', 'running', 'done', 'failed', 'superseded')));
        CREATE INDEX jobs_due ON jobs (not_before, id) WHERE state = 'queued';
        CREATE INDEX jobs_by_state ON jobs (state, id);
        CREATE INDEX jobs_by_change ON jobs (forge, project, number, state);
        CREATE INDEX jobs_by_lease ON jobs (lease_until) WHERE lease_until IS NOT NULL;
        {_ONE_WAITING};
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE learnings (
            id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            project    TEXT    NOT NULL,
            text       TEXT    NOT NULL,
            paths      TEXT    NOT NULL,
            category   TEXT    NOT NULL DEFAULT '',
            author     TEXT    NOT NULL DEFAULT '',
            source     TEXT    NOT NULL DEFAULT '',
            created_at DOUBLE PRECISION NOT NULL);
        CREATE INDEX learnings_by_project ON learnings (project, id)""")),
    Migration(2, "learnings awaiting approval", _script(_APPROVED)),
    Migration(3, "a note job's discussion", _script(_DISCUSSION)),
    Migration(4, "project names", _script(_NAMES)),
    Migration(5, "finding outcomes", _script(_OUTCOMES.format(real="DOUBLE PRECISION"))),
    Migration(6, "review history", _script(_REVIEWS.format(
        id="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", real="DOUBLE PRECISION"))),
)

MIGRATIONS = {"sqlite": SQLITE, "postgres": POSTGRES}


def migrate(db: Database) -> list[int]:
    """Apply the missing migrations in order; returns the versions applied now."""
    steps = MIGRATIONS[db.dialect]
    with db.tx() as tx:
        db.lock(tx, "reviewbot schema migrations")
        tx.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
                   " name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
        done = {int(r[0]) for r in tx.execute("SELECT version FROM schema_migrations").fetchall()}
        newest = max(m.version for m in steps)
        if done and max(done) > newest:
            raise DatabaseError(f"the database's schema is version {max(done)}, newer than this"
                                f" release's {newest}: upgrade reviewbot")
        applied = []
        for step in steps:
            if step.version not in done:
                step.apply(tx)
                tx.execute("INSERT INTO schema_migrations (version, name, applied_at)"
                           " VALUES (?, ?, ?)", (step.version, step.name, time.time()))
                applied.append(step.version)
    return applied


_HAS_MIGRATIONS = {
    "sqlite": "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
              " AND name = 'schema_migrations'",
    "postgres": "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'schema_migrations'"
                " AND schemaname = current_schema()",
}


def version(db: Database) -> int:
    """The newest migration applied; 0 for a database nothing migrated yet."""
    with db.read() as tx:
        if not tx.execute(_HAS_MIGRATIONS[db.dialect]).fetchone()[0]:
            return 0
        row = tx.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)
