"""Round 2 against the listener: numbers too long to convert, clients that trickle, answers that
/metrics did not count, allow-list globs against `..`, and a GitLab replay under a fresh
Idempotency-Key."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from tests.webhook.recording_runner import RecordingRunner, recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    ThreadServer,
    gitlab_event,
    make_settings,
    wait_for,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
LONG = "9" * 5000  # beyond Python's 4,300-digit int conversion limit


@pytest.mark.parametrize("field", ["project.id", "object_attributes.iid", "extra"])
def test_an_integer_of_any_length_is_400(client: httpx.Client, field: str) -> None:
    headers, body = gitlab_event()
    text = body.decode()
    if field == "project.id":
        text = text.replace('"id": 42', f'"id": {LONG}')
    elif field == "object_attributes.iid":
        text = text.replace('"iid": 7', f'"iid": {LONG}')
    else:
        text = text[:-1] + f', "extra": {LONG}}}'
    assert LONG in text
    r = client.post("/webhook/gitlab", content=text.encode(), headers=headers)
    assert r.status_code == 400, r.text


def _raw(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def _closed_after(sock: socket.socket, trickle: bytes, limit: float) -> tuple[bool, bytes]:
    """Send `trickle` a byte every 0.2 s for `limit` seconds at most: whether the server ended
    the connection first (not a wall-clock bound, which a loaded machine blurs), and its answer."""
    started = time.monotonic()
    answer, closed = b"", False
    for byte in trickle:
        if time.monotonic() - started > limit:
            break
        try:
            sock.sendall(bytes([byte]))
            sock.settimeout(0.2)
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            closed = True
            break
        answer += data
        closed = True  # an answer, or b"": the server's end
        break
    sock.settimeout(5)
    try:
        while data := sock.recv(4096):
            answer += data
    except OSError:
        pass
    return closed, answer


def test_slow_headers_and_slow_bodies_are_cut_off(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", header_timeout_s=1.0, body_timeout_s=1.0)
    headers, body = gitlab_event()
    head = "POST /webhook/gitlab HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + f"Content-Length: {len(body)}\r\n\r\n"
    with ThreadServer(settings, runner) as srv:
        with _raw(srv.port) as sock:  # the headers, one byte at a time, never finished
            closed, answer = _closed_after(
                sock, b"POST /webhook/gitlab HTTP/1.1\r\nX-A: " + b"a" * 60, limit=8)
        assert closed and answer == b"", answer
        with _raw(srv.port) as sock:  # the headers at once, then the body trickles
            sock.sendall(head.encode())
            closed, answer = _closed_after(sock, body, limit=8)
        assert closed and answer.startswith(b"HTTP/1.1 408"), answer[:80]
        with httpx.Client(base_url=srv.url) as c:  # a normal client is still served
            assert c.post("/webhook/gitlab", content=body, headers=headers).status_code == 202
            metrics = c.get("/metrics").text
    assert 'reviewbot_webhook_events_rejected_total{forge="gitlab",reason="body_timeout"} 1.0' \
        in metrics


def test_every_status_is_counted_errors_included(tmp_path: Path, runner: RecordingRunner) -> None:
    """The queue database misbehaving under /jobs gives a 503 (try again), and /metrics
    counts it."""
    db = tmp_path / "q.sqlite"
    with ThreadServer(make_settings(db), runner) as srv, \
            httpx.Client(base_url=srv.url, headers={"Connection": "close"}) as c:
        with sqlite3.connect(db) as conn:
            conn.execute("ALTER TABLE jobs RENAME TO jobs_away")
        assert c.get("/jobs", headers=ADMIN).status_code == 503
        with sqlite3.connect(db) as conn:
            conn.execute("ALTER TABLE jobs_away RENAME TO jobs")
        assert c.get("/jobs").status_code == 401
        assert c.get("/nowhere").status_code == 404
        metrics = c.get("/metrics").text
    for line in ('route="/jobs",status="503"} 1.0', 'route="/jobs",status="401"} 1.0',
                 'route="other",status="404"} 1.0'):
        assert f"reviewbot_webhook_responses_total{{{line}" in metrics, metrics


@pytest.mark.parametrize("path", ["team/../../admin", "team/./app", "team//app", "team/app/..",
                                  "team/app\n", "team/ap p"])
def test_allow_list_globs_match_normal_paths_only(path: str, tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "q.sqlite", allow=("team/*",))
    assert settings.allowed_name(path) is None
    assert settings.allowed_name("team/app") == "team/app"
    assert settings.allowed_name("team/sub.group/app-2") == "team/sub.group/app-2"


def test_a_gitlab_replay_under_a_new_key_does_not_supersede_the_review(
        tmp_path: Path) -> None:
    runner = RecordingRunner(tmp_path / "reviews.sqlite", delay=1.0)
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        headers, body = gitlab_event(sha="e" * 40)
        first = c.post("/webhook/gitlab", content=body, headers=headers)
        assert first.status_code == 202
        job_id = first.json()["job_id"]
        wait_for(lambda: c.get(f"/jobs/{job_id}", headers=ADMIN).json()["state"] == "running")
        replay = c.post("/webhook/gitlab", content=body,
                        headers={**headers, "Idempotency-Key": "fresh-key-0002"})
        assert replay.status_code == 200 and replay.json() == {"status": "duplicate",
                                                              "job_id": job_id}
        wait_for(lambda: c.get(f"/jobs/{job_id}", headers=ADMIN).json()["state"] == "done")
        # a real new push (another head) is a new event
        headers2, body2 = gitlab_event(sha="f" * 40)
        assert c.post("/webhook/gitlab", content=body2, headers=headers2).status_code == 202
    assert [r[4] for r in recorded(runner.db)][:1] == ["e" * 40]
    assert json.loads(body)["object_attributes"]["last_commit"]["id"] == "e" * 40
