"""The listener's database: SQLite (one process, the default) or PostgreSQL (any number of
listener replicas on any hosts). One small interface over the two drivers, so the queue's and
the learnings' SQL is written once (`?` placeholders, `RETURNING`, `ON CONFLICT`: both speak
them); what only one backend has (advisory locks, `SKIP LOCKED`, `LISTEN/NOTIFY`) sits behind
a method that is a no-op on the other.

    open_database("sqlite:///path/q.sqlite")      # or a bare path
    open_database("postgresql://user:pw@host/db")  # psycopg 3 with its connection pool

Driver errors leave this package as `DatabaseError`, one line, redacted.
"""

from __future__ import annotations

from reviewbot.db.base import (
    Cursor,
    Database,
    DatabaseError,
    Dialect,
    Tx,
    display,
    in_clause,
    sqlite_path,
)
from reviewbot.errors import UsageError
from reviewbot.redact import register_url

__all__ = ["LISTENER_DB", "Cursor", "Database", "DatabaseError", "Dialect", "Tx", "display",
           "in_clause", "open_database", "open_existing", "sqlite_path"]

LISTENER_DB = ".reviewbot-state/webhook.sqlite"  # the listener's default --db


def open_database(url: str, exclusive: bool = False) -> Database:
    """`exclusive`: this process owns a SQLite file (the listener); others open it beside it."""
    register_url(url)
    path = sqlite_path(url)
    if path is not None:
        from reviewbot.db.sqlite import SqliteDatabase

        return SqliteDatabase.open(path, exclusive)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from reviewbot.db.postgres import PostgresDatabase
        except ImportError:
            raise UsageError("a PostgreSQL queue needs psycopg: pip install 'reviewbot[postgres]'"
                             ) from None

        return PostgresDatabase.open(url)
    raise UsageError(f"queue URL must be sqlite:///PATH or postgresql://…, got {display(url)!r}")



def open_existing(url: str) -> Database:
    """The listener's database for a command beside it: a SQLite file that is not there is
    a usage error, not a new empty database."""
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise UsageError(f"no database at {path} (pass the listener's --db)")
    return open_database(url)
