"""Round 2 against the listener: numbers too long to convert, clients that trickle, answers that
/metrics did not count, allow-list globs against `..`, and a GitLab replay under a fresh
Idempotency-Key."""

from __future__ import annotations

import json
import sqlite3
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
