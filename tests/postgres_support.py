"""A real PostgreSQL server for the tests: the one .ci/run started ($REVIEWBOT_TEST_POSTGRES_URL,
an admin URL), else one started here with scripts/postgres.sh for the session. Each test gets a
database of its own. Skipped, with the reason, only where no PostgreSQL server is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tests.cleanup import after_exit

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "scripts/postgres.sh")


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextmanager
def private_postgres() -> Iterator[tuple[str, Path, str]]:
    """A PostgreSQL server of this test process: (admin URL, its folder, its port), stopped and
    removed afterwards, also when pytest is killed (tests.cleanup)."""
    from tests.webhook.webhook_support import free_port

    # not under pytest's 0700 temp root: as root, the server runs as the `postgres` user
    where = Path(tempfile.mkdtemp(prefix="reviewbot-test-pg-"))
    watcher = after_exit([where], [SCRIPT, "stop", str(where)])
    started = subprocess.run([SCRIPT, "start", str(where), str(free_port())],
                             capture_output=True, text=True)
    try:
        if started.returncode == 2 and "no PostgreSQL server installed" in started.stderr:
            pytest.skip("no PostgreSQL server is installed here (apt-get install postgresql)")
        assert started.returncode == 0, started.stderr[-2000:]
        url = started.stdout.strip()
        yield url, where, url.rsplit(":", 1)[1].split("/")[0]
    finally:
        subprocess.run([SCRIPT, "stop", str(where)], capture_output=True, check=False)
        shutil.rmtree(where, ignore_errors=True)
        watcher.done()


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    given = os.environ.get("REVIEWBOT_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    with private_postgres() as (url, _, _):
        yield url


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty database, dropped after the test."""
    name = f"rb_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(postgres_admin_url, name)
    finally:
        with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(params=["sqlite", "postgres"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each backend in turn: the contract tests run on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'queue.sqlite'}"
    return str(request.getfixturevalue("postgres_url"))
