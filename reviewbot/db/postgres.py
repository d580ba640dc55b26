"""PostgreSQL through psycopg 3 and its connection pool. Any number of processes on any hosts
share one database: claims use `FOR UPDATE SKIP LOCKED`, per-change writes an advisory lock,
and `LISTEN/NOTIFY` wakes the other replicas' workers (new job, superseded job) at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from reviewbot.db.base import Cursor, Database, DatabaseError, Tx, display

log = logging.getLogger("reviewbot.db")
POOL_SIZE = 10  # intake threads + dispatcher + outcomes + the heartbeat
CONNECT_TIMEOUT_S = 10.0
# How long a request waits for a connection: under a forge's webhook timeout (GitLab: 10 s),
# so an outage is answered 503 (and redelivered) rather than dropped by the forge.
CHECKOUT_TIMEOUT_S = 3.0


class _PgTx:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, query: str, args: Sequence[object] = ()) -> Cursor:
        # one SQL text for both backends: `?` here, and no literal `%` in the queries
        return self._conn.execute(query.replace("?", "%s"), tuple(args))  # type: ignore[arg-type]


def _error(url: str, exc: BaseException) -> DatabaseError:
    return DatabaseError(f"database {display(url)}: {type(exc).__name__}: {exc}")


class PostgresDatabase(Database):
    dialect = "postgres"
    shared = True
    skip_locked = " FOR UPDATE OF j SKIP LOCKED"

    def __init__(self, url: str, pool: ConnectionPool[Any]) -> None:
        self._url = url
        self._pool = pool

    @classmethod
    def open(cls, url: str) -> PostgresDatabase:
        pool: ConnectionPool[Any] = ConnectionPool(
            url, min_size=1, max_size=POOL_SIZE, open=False, name="reviewbot",
            kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT_S)},
            # a connection broken by a server restart or failover is replaced before use,
            # rather than failing the request that drew it (one round trip per checkout)
            check=ConnectionPool.check_connection, timeout=CHECKOUT_TIMEOUT_S)
        try:
            pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except (PoolTimeout, psycopg.Error) as exc:
            pool.close()
            raise _error(url, exc) from None
        return cls(url, pool)

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield _PgTx(conn)
        except (PoolTimeout, psycopg.Error) as exc:
            raise _error(self._url, exc) from None

    @contextmanager
    def read(self) -> Iterator[Tx]:
        try:
            with self._pool.connection() as conn:
                yield _PgTx(conn)
        except (PoolTimeout, psycopg.Error) as exc:
            raise _error(self._url, exc) from None

    def lock(self, tx: Tx, key: str) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def notify(self, tx: Tx, channel: str, payload: str = "") -> None:
        tx.execute("SELECT pg_notify(?, ?)", (channel, payload))

    def listen(self, channels: Sequence[str], on: Callable[[str, str], None],
               stop: threading.Event) -> None:
        """On a connection of its own (not the pool's); reconnects after a failure. A
        notification missed while disconnected costs at most the dispatcher's 1 s poll."""
        while not stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True,
                                     connect_timeout=int(CONNECT_TIMEOUT_S)) as conn:
                    for channel in channels:
                        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    while not stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            on(note.channel, note.payload)
            except psycopg.Error as exc:  # a bug in `on` is not caught: it ends loudly
                log.warning("%s; listening again in 1 s", _error(self._url, exc))
                stop.wait(1.0)
