"""SQLite: one owner per file, transactions that commit or roll back whole, driver errors as one
line."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.db import DatabaseError, open_database
from reviewbot.errors import UsageError
from reviewbot.webhook.queue import JobQueue


def test_a_sqlite_file_is_owned_by_one_process(tmp_path: Path) -> None:
    q = JobQueue.open(tmp_path / "q.sqlite")
    with pytest.raises(UsageError, match="in use"):
        JobQueue.open(tmp_path / "q.sqlite")
    q.close()


def test_a_transaction_commits_whole_or_not_at_all(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path}/t.sqlite")
    with db.tx() as tx:
        tx.execute("CREATE TABLE t (n INTEGER NOT NULL)")
    with pytest.raises(RuntimeError), db.tx() as tx:
        tx.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("the caller failed half-way")
    with db.tx() as tx:
        tx.execute("INSERT INTO t VALUES (2)")
    db.checkpoint()  # the WAL copied back, writers not blocked
    with db.read() as tx:
        assert tx.execute("SELECT n FROM t").fetchall() == [(2,)]
    db.close()


def test_a_driver_error_is_one_database_error_line(tmp_path: Path) -> None:
    db = open_database(str(tmp_path / "t.sqlite"))
    with pytest.raises(DatabaseError, match="^database error: no such table: missing$"), \
            db.read() as tx:
        tx.execute("SELECT * FROM missing")
    with pytest.raises(DatabaseError), db.tx() as tx:
        tx.execute("INSERT INTO missing VALUES (1)")
    db.close()


def test_a_database_in_a_missing_directory_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        open_database(str(tmp_path / "typo" / "q.sqlite"))
    assert not (tmp_path / "typo").exists()
