"""Two real `reviewbot webhook` processes on one PostgreSQL queue, one killed with SIGKILL
while it holds reviews: every pushed head is reviewed exactly once, no event is lost, and no
job is left leased."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg

from tests.webhook.recording_runner import recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    WebhookProcess,
    github_event,
    gitlab_event,
    wait_for,
    webhook_process,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
HEADS, COPIES = 50, 10  # 500 deliveries


def _deliveries() -> tuple[list[tuple[str, dict[str, str], bytes]], Counter[tuple[str, ...]]]:
    """Each head's event ten times: eight fresh deliveries of it (the forge's retries, under new
    delivery ids) and two replays of the first, interleaved across heads."""
    sent: list[tuple[str, dict[str, str], bytes]] = []
    expected: Counter[tuple[str, ...]] = Counter()
    for copy in range(COPIES):
        for i in range(HEADS):
            sha = f"{i + 1:040x}"
            if i % 2:
                headers, body = gitlab_event(project_id=200 + i, iid=i, sha=sha,
                                             key=f"gl-{i}-{min(copy, 7)}")
                sent.append(("gitlab", headers, body))
                key: tuple[str, ...] = ("gitlab", str(200 + i), str(i), sha)
            else:
                headers, body = github_event(repo=f"octo/r{i}", number=i, sha=sha,
                                             delivery=f"gh-{i}-{min(copy, 7)}")
                sent.append(("github", headers, body))
                key = ("github", f"octo/r{i}", str(i), sha)
            if copy == 0:
                expected[key] = 1
    return sent, expected


def _send(proc: WebhookProcess, batch: list[tuple[str, dict[str, str], bytes]]) -> Counter[int]:
    with httpx.Client(base_url=proc.url, timeout=10) as c:
        return Counter(c.post(f"/webhook/{forge}", content=body, headers=headers).status_code
                       for forge, headers, body in batch)


def _pids_started(reviews: Path) -> Counter[int]:
    if not reviews.exists():
        return Counter()
    conn = sqlite3.connect(reviews, timeout=10)
    try:
        return Counter(r[0] for r in conn.execute("SELECT pid FROM events WHERE kind = 'start'"))
    finally:
        conn.close()


def test_two_listeners_on_one_postgres_through_a_kill_9(tmp_path: Path, postgres_url: str) -> None:
    reviews, gate = tmp_path / "reviews.sqlite", tmp_path / "gate"
    env = {"RECORDING_DB": str(reviews), "RECORDING_GATE": str(gate),
           "REVIEWBOT_WEBHOOK_LEASE": "3"}
    sent, expected = _deliveries()
    answers: Counter[int] = Counter()
    args = ("--workers", "2", "--rate-limit", "100000")  # one client sends it all
    with webhook_process(tmp_path / "a", env, *args, queue_url=postgres_url) as a, \
            webhook_process(tmp_path / "b", env, *args, queue_url=postgres_url) as b:
        answers += _send(a, sent[0:250:2]) + _send(b, sent[1:250:2])
        assert a.proc is not None
        killed = a.proc.pid
        wait_for(lambda: _pids_started(reviews)[killed] == 2)
        a.kill9()  # with two reviews in hand, blocked
        answers += _send(b, sent[250:350])
        a.start()  # the same replica comes back (a new process)
        gate.touch()
        answers += _send(a, sent[350::2]) + _send(b, sent[351::2])
        wait_for(lambda: httpx.get(f"{b.url}/jobs", headers=ADMIN).json()["counts"]["done"]
                 == HEADS, timeout=60)
        jobs = httpx.get(f"{b.url}/jobs?limit=1000", headers=ADMIN).json()
    assert answers == Counter({202: HEADS, 200: len(sent) - HEADS})  # each event queued once
    reviewed = Counter(tuple(map(str, r[1:])) for r in recorded(reviews))
    assert reviewed == expected  # every head, exactly once
    assert jobs["counts"] == {"queued": 0, "running": 0, "done": HEADS, "failed": 0,
                              "superseded": 0}
    taken_over = [j for j in jobs["jobs"] if j["attempts"] == 2]
    assert len(taken_over) == 2  # the killed process's, finished by another
    assert all(f":{killed}:" not in j["worker"] for j in taken_over)
    with psycopg.connect(postgres_url) as conn:
        leased = conn.execute("SELECT count(*) FROM jobs WHERE lease_until IS NOT NULL").fetchone()
        workers = conn.execute("SELECT count(DISTINCT worker) FROM jobs").fetchone()
    assert leased == (0,) and workers is not None and workers[0] >= 2
    password = urlsplit(postgres_url).password or ""
    for log in (tmp_path / "a.log", tmp_path / "b.log"):
        assert password not in log.read_text()


def test_a_push_to_one_replica_stops_the_review_running_on_another(
        tmp_path: Path, postgres_url: str) -> None:
    """b starts only after a runs the first review, so the cancel can reach a only through the
    database's notification (or, failing that, a's next heartbeat)."""
    reviews, gate = tmp_path / "reviews.sqlite", tmp_path / "gate"
    env = {"RECORDING_DB": str(reviews), "RECORDING_GATE": str(gate)}
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(webhook_process(tmp_path / "a", env, queue_url=postgres_url))
        headers, body = gitlab_event(sha="1" * 40)
        assert httpx.post(f"{a.url}/webhook/gitlab", content=body, headers=headers).status_code == 202
        wait_for(lambda: len(recorded(reviews, "start")) == 1)  # on a, blocked on the gate
        b = stack.enter_context(webhook_process(tmp_path / "b", env, queue_url=postgres_url))
        headers, body = gitlab_event(sha="2" * 40)
        assert httpx.post(f"{b.url}/webhook/gitlab", content=body, headers=headers).status_code == 202
        # stopped, then the next: within 5 s, before a's first heartbeat (10 s) could tell it
        wait_for(lambda: len(recorded(reviews, "start")) == 2, timeout=5)
        gate.touch()
        wait_for(lambda: httpx.get(f"{a.url}/jobs", headers=ADMIN).json()["counts"]["done"] == 1)
        counts = httpx.get(f"{b.url}/jobs", headers=ADMIN).json()["counts"]
    assert [r[4] for r in recorded(reviews)] == ["2" * 40]  # the superseded review posted nothing
    assert (counts["done"], counts["superseded"], counts["running"]) == (1, 1, 0)
