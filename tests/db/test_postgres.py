"""PostgreSQL (a private real server): an unreachable database is one line without its password,
and a restart under an open pool loses nothing committed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from reviewbot.db import DatabaseError, open_database
from reviewbot.webhook.queue import JobQueue
from tests.postgres_support import SCRIPT, private_postgres
from tests.webhook.test_queue import queued_request


def test_an_unreachable_database_is_one_line_without_the_password() -> None:
    with pytest.raises(DatabaseError) as caught:
        open_database("postgresql://bot:hunter2-secret@127.0.0.1:9/reviewbot")
    message = str(caught.value)
    assert "hunter2-secret" not in message and "\n" not in message
    assert "127.0.0.1:9" in message


def test_a_database_restart_loses_nothing_committed_and_the_queue_reconnects(tmp_path: Path) -> None:
    """A private server, stopped and started under an open queue: while it is down an enqueue
    fails as one redacted line (the listener answers 503: the forge redelivers); once it is back
    the same queue reconnects by itself, and nothing committed is lost."""
    with private_postgres() as (url, where, port):
        q = JobQueue.open(url)
        q.enqueue(queued_request(delivery="before"))
        subprocess.run([SCRIPT, "stop", str(where)], check=True)
        with pytest.raises(DatabaseError) as down:
            q.enqueue(queued_request(number=2, delivery="during"))
        assert (urlsplit(url).password or "?") not in str(down.value)
        subprocess.run([SCRIPT, "start", str(where), port], check=True, capture_output=True)
        deadline = time.monotonic() + 60  # the pool reconnects with backoff; the forge redelivers
        while True:
            try:
                q.enqueue(queued_request(number=3, delivery="after"))
                break
            except DatabaseError:
                assert time.monotonic() < deadline, "the queue did not reconnect within 60 s"
                time.sleep(0.5)
        assert sorted(r.job.delivery_id for r in q.list()) == ["after", "before"]
        q.close()
