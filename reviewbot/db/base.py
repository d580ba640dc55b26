"""The interface the two drivers implement (see reviewbot.db)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from reviewbot.errors import ReviewbotError

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


def in_clause(values: Sequence[object]) -> str:
    """`(?, ?, ?)` for `IN`; never empty (callers skip empty lists)."""
    return "(" + ", ".join("?" * len(values)) + ")"

