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

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from reviewbot.errors import ReviewbotError, UsageError, register_url

Dialect = Literal["sqlite", "postgres"]


class DatabaseError(ReviewbotError):
    """The database failed or cannot be reached (the listener answers 503, the worker retries)."""

    exit_code = 3


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """One transaction (or, from `read()`, one connection in autocommit)."""

    def execute(self, sql: str, args: Sequence[object] = ()) -> Cursor: ...


class Database(ABC):
    dialect: Dialect
    #: several processes may use it at once (leases matter; a crash is not everyone's)
    shared: bool
    #: appended to a `SELECT … LIMIT 1` that claims a row
    skip_locked: str = ""

    @abstractmethod
    def tx(self) -> AbstractContextManager[Tx]:
        """A write transaction: committed when the block ends, rolled back if it raises."""

    @abstractmethod
    def read(self) -> AbstractContextManager[Tx]: ...

    @abstractmethod
    def close(self) -> None: ...

    def lock(self, tx: Tx, key: str) -> None:
        """Serialise transactions that name the same key, until this one ends."""

    def notify(self, tx: Tx, channel: str, payload: str = "") -> None:
        """Tell the other processes, when this transaction commits."""

    def listen(self, channels: Sequence[str], on: Callable[[str, str], None],
               stop: threading.Event) -> None:
        """Call `on(channel, payload)` for every notification until `stop` is set."""

    def checkpoint(self) -> None:
        """Housekeeping that must stay off the request path (SQLite's WAL checkpoint)."""


def display(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}" if user else netloc))


def sqlite_path(url: str) -> Path | None:
    """`sqlite:///rel/or/abs` (or a bare path) → the path; None for another scheme."""
    if url.startswith("sqlite:///"):
        return Path(url.removeprefix("sqlite:///"))
    return None if "://" in url else Path(url)


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


def in_clause(values: Sequence[object]) -> str:
    """`(?, ?, ?)` for `IN`; never empty (callers skip empty lists)."""
    return "(" + ", ".join("?" * len(values)) + ")"

