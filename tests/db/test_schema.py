"""Versioned schema migrations on both backends: applied once, in order, idempotent; a file from
before versions upgraded in place; replicas starting at once; a newer database refused."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import psycopg
import pytest

from reviewbot.conversation.learnings import LearningStore
from reviewbot.db import DatabaseError
from reviewbot.db.schema import MIGRATIONS, migrate, version
from reviewbot.webhook.queue import JobQueue


def test_migrations_are_versioned_and_idempotent(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    newest = max(m.version for m in MIGRATIONS[q.db.dialect])
    assert version(q.db) == newest and migrate(q.db) == []
    with q.db.tx() as tx:
        tx.execute("INSERT INTO schema_migrations VALUES (?, 'from the future', 0)", (newest + 1,))
    q.close()
    with pytest.raises(DatabaseError, match="newer than this release"):
        JobQueue.open(queue_url)


def test_a_sqlite_file_from_before_versioned_migrations_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, forge TEXT NOT NULL,
            project TEXT NOT NULL, number INTEGER NOT NULL, head_sha TEXT NOT NULL,
            base_url TEXT NOT NULL, delivery_id TEXT NOT NULL, received_at REAL NOT NULL,
            state TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0,
            not_before REAL NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',
            superseded_by INTEGER, started_at REAL, finished_at REAL, UNIQUE (forge, delivery_id));
        INSERT INTO jobs (forge, project, number, head_sha, base_url, delivery_id, received_at)
            VALUES ('github', 'o/r', 3, 'abc', 'https://api.github.com', 'old', 1);
        CREATE TABLE learnings (id INTEGER PRIMARY KEY AUTOINCREMENT, project TEXT NOT NULL,
            text TEXT NOT NULL, paths TEXT NOT NULL, category TEXT NOT NULL DEFAULT '',
            author TEXT NOT NULL DEFAULT '', source TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL);
        INSERT INTO learnings (project, text, paths, created_at) VALUES ('1', 'kept', '["*"]', 0);
    """)
    conn.close()
    q = JobQueue.open(path)
    job = q.claim()
    assert job is not None and (job.delivery_id, job.note_id) == ("old", None)
    assert [x.text for x in LearningStore(q.db).list("1")] == ["kept"]
    assert version(q.db) == max(m.version for m in MIGRATIONS["sqlite"])
    q.close()


def test_replicas_starting_at_once_apply_each_migration_once(postgres_url: str) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            JobQueue.open(postgres_url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with psycopg.connect(postgres_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == [m.version for m in MIGRATIONS["postgres"]]
