"""With its PostgreSQL server stopped, a real listener process stays live: /healthz answers at
once while deliveries wait on the database, each delivery gets its 503 inside GitLab's 10 s
webhook timeout (so the forge redelivers), /metrics still answers, and once the server is back
the same process takes events again."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.postgres_support import SCRIPT, private_postgres
from tests.webhook.webhook_support import ADMIN_TOKEN, gitlab_event, webhook_process


@pytest.fixture(name="private_postgres")
def private_postgres_fixture() -> Iterator[tuple[str, Path, str]]:
    with private_postgres() as server:
        yield server


def _deliver(url: str) -> tuple[int, float]:
    headers, body = gitlab_event(sha=f"{time.monotonic_ns():040x}"[-40:])
    started = time.monotonic()
    status = httpx.post(f"{url}/webhook/gitlab", headers=headers, content=body,
                        timeout=30).status_code
    return status, time.monotonic() - started


def test_the_listener_stays_live_while_its_database_is_down(
        tmp_path: Path, private_postgres: tuple[str, Path, str]) -> None:
    url, where, port = private_postgres
    with webhook_process(tmp_path / "listener.sqlite", {}, queue_url=url) as listener:
        assert _deliver(listener.url)[0] == 202
        subprocess.run([SCRIPT, "stop", str(where)], check=True, capture_output=True)
        with ThreadPoolExecutor(5) as pool:
            deliveries = [pool.submit(_deliver, listener.url) for _ in range(5)]
            time.sleep(0.3)  # the deliveries are waiting on the database now
            started = time.monotonic()
            assert httpx.get(f"{listener.url}/healthz", timeout=5).status_code == 200
            assert time.monotonic() - started < 1.0
            metrics = httpx.get(f"{listener.url}/metrics", timeout=10)
            jobs = httpx.get(f"{listener.url}/jobs", timeout=10,
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            answers = [d.result() for d in deliveries]
        assert all(status == 503 for status, _ in answers), answers
        assert max(seconds for _, seconds in answers) < 10, answers
        assert metrics.status_code == 200 and "reviewbot_webhook_database_up 0.0" in metrics.text
        assert jobs.status_code == 503
        subprocess.run([SCRIPT, "start", str(where), port], check=True, capture_output=True)
        deadline = time.monotonic() + 30
        while _deliver(listener.url)[0] != 202:
            assert time.monotonic() < deadline, "no event taken 30 s after the database is back"
            time.sleep(0.5)
