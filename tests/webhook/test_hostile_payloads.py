"""Signed but hostile payloads: they cannot aim a review at a project outside the allow-list,
crash the listener into a 500, or become many jobs by replay."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx

from reviewbot.webhook.auth import github_signature
from tests.webhook.recording_runner import RecordingRunner, recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    GITHUB_SECRET,
    GITLAB_SECRET,
    ThreadServer,
    github_event,
    gitlab_event,
    make_settings,
    wait_for,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def test_an_allowed_path_with_another_projects_id_reviews_the_allowed_path(
        tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", allow=("team/*",))
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        # project 999 is not allowed; the payload names an allowed path beside its id
        headers, body = gitlab_event(project_id=999, path="team/app")
        r = c.post("/webhook/gitlab", content=body, headers=headers)
        assert r.status_code == 202
        job_id = r.json()["job_id"]
        wait_for(lambda: c.get(f"/jobs/{job_id}", headers=ADMIN).json()["state"] == "done")
        assert [row[2] for row in recorded(runner.db)] == ["team/app"]  # never "999"
        headers, body = gitlab_event(project_id=999, path="elsewhere/app")
        assert c.post("/webhook/gitlab", content=body, headers=headers).json()["status"] == "ignored"


def _gitlab(body: bytes) -> dict[str, str]:
    return {"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": GITLAB_SECRET,
            "Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/json"}


def test_malformed_signed_payloads_are_400(client: httpx.Client) -> None:
    _, good = gitlab_event()
    event = json.loads(good)
    deep = b'{"object_kind": "merge_request", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge_iid = json.dumps({**event, "object_attributes": {
        **event["object_attributes"], "iid": 10**30}}).encode()
    bad_sha = json.dumps({**event, "object_attributes": {
        **event["object_attributes"], "last_commit": {"id": "x; rm -rf /"}}}).encode()
    for body in (deep, huge_iid, bad_sha):
        r = client.post("/webhook/gitlab", content=body, headers=_gitlab(body))
        assert r.status_code == 400, r.text
    gh_headers, gh_body = github_event()
    payload = json.loads(gh_body)
    payload["pull_request"]["number"] = 10**30
    body = json.dumps(payload).encode()
    gh_headers["X-Hub-Signature-256"] = github_signature(GITHUB_SECRET, body)
    assert client.post("/webhook/github", content=body, headers=gh_headers).status_code == 400


def test_a_replayed_github_body_under_new_delivery_ids_is_one_job(client: httpx.Client) -> None:
    headers, body = github_event(sha="c" * 40)
    answers = []
    for _ in range(5):
        answers.append(client.post("/webhook/github", content=body,
                                   headers={**headers, "X-GitHub-Delivery": str(uuid.uuid4())}))
    assert [r.status_code for r in answers] == [202, 200, 200, 200, 200]
    assert {r.json()["status"] for r in answers[1:]} == {"duplicate"}
    # a new head or another action is another event
    headers2, body2 = github_event(sha="d" * 40)
    assert client.post("/webhook/github", content=body2, headers=headers2).status_code == 202
