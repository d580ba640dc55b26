"""SQLite in WAL mode: one connection behind a lock (writes are tiny), and, for the process
that owns the file, an exclusive lock file (two listeners on one SQLite file would each
requeue the other's running jobs at start)."""

from __future__ import annotations

import fcntl
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from reviewbot.db.base import Cursor, Database, DatabaseError, Tx
from reviewbot.errors import UsageError


class _SqliteTx:
    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    def execute(self, sql: str, args: Sequence[object] = ()) -> Cursor:
        return self._cur.execute(sql, tuple(args))


class SqliteDatabase(Database):
    dialect = "sqlite"
    shared = False

    def __init__(self, conn: sqlite3.Connection, lock_file: IO[bytes] | None,
                 checkpoint_conn: sqlite3.Connection | None) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._lock_file = lock_file
        self._checkpoint_conn = checkpoint_conn

    @classmethod
    def open(cls, path: Path, exclusive: bool) -> SqliteDatabase:
        if not path.parent.is_dir():  # a typo must not grow a directory tree
            raise UsageError(f"--db {path}: the directory {path.parent} does not exist")
        lock_file = None
        if exclusive:
            lock_file = open(f"{path}.lock", "wb")  # noqa: SIM115 - held for the database's life
            try:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock_file.close()
                raise UsageError(f"queue database {path} is in use by another process") from None
        try:
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Commits never checkpoint (an fsync on the request path); `checkpoint()` does,
            # from the dispatcher thread, on a connection of its own.
            conn.execute("PRAGMA wal_autocheckpoint=0")
            checkpoint_conn = sqlite3.connect(path, check_same_thread=False,
                                              isolation_level=None, timeout=5)
        except sqlite3.Error as exc:
            if lock_file is not None:
                lock_file.close()
            raise UsageError(f"cannot open database {path}: {exc}") from None
        return cls(conn, lock_file, checkpoint_conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            if self._checkpoint_conn is not None:
                self._checkpoint_conn.close()
            if self._lock_file is not None:
                self._lock_file.close()

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        with self._lock:
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                try:
                    yield _SqliteTx(cur)
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            except sqlite3.Error as exc:
                raise DatabaseError(f"database error: {exc}") from None

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self._lock:
            try:
                yield _SqliteTx(self._conn.cursor())
            except sqlite3.Error as exc:
                raise DatabaseError(f"database error: {exc}") from None

    def checkpoint(self) -> None:
        """Copy the WAL into the database without blocking writers (PASSIVE)."""
        if self._checkpoint_conn is not None:
            try:
                self._checkpoint_conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:
                raise DatabaseError(f"database error: {exc}") from None
