"""Real HTTP against the app on a loopback port: authentication, filtering, limits, dedupe."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewbot.webhook.auth import github_signature
from tests.webhook.recording_runner import RecordingRunner, recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    GITHUB_SECRET,
    ThreadServer,
    github_event,
    gitlab_event,
    make_settings,
    wait_for,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def job_count(client: httpx.Client) -> int:
    counts = client.get("/jobs", headers=ADMIN).json()["counts"]
    return sum(counts.values())


def test_valid_gitlab_push_is_queued_and_reviewed(client: httpx.Client, runner: RecordingRunner) -> None:
    headers, body = gitlab_event(project_id=42, iid=7, sha="c" * 40)
    r = client.post("/webhook/gitlab", content=body, headers=headers)
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    wait_for(lambda: client.get(f"/jobs/{job_id}", headers=ADMIN).json()["state"] == "done")
    job = client.get(f"/jobs/{job_id}", headers=ADMIN).json()
    assert (job["forge"], job["project"], job["number"], job["head_sha"]) == ("gitlab", "42", 7, "c" * 40)
    assert job["base_url"] == "https://gitlab.example.com"
    assert recorded(runner.db) == [(job_id, "gitlab", "42", 7, "c" * 40)]


def test_valid_github_push_is_queued(client: httpx.Client) -> None:
    headers, body = github_event(repo="octo/app", number=3, action="opened")
    r = client.post("/webhook/github", content=body, headers=headers)
    assert r.status_code == 202, r.text
    job = client.get(f"/jobs/{r.json()['job_id']}", headers=ADMIN).json()
    assert (job["project"], job["number"], job["base_url"]) == ("octo/app", 3, "https://api.github.com")


def _forged_gitlab() -> list[dict[str, str]]:
    headers, _ = gitlab_event()
    wrong = {**headers, "X-Gitlab-Token": "not-the-secret"}
    missing = {k: v for k, v in headers.items() if k != "X-Gitlab-Token"}
    prefix = {**headers, "X-Gitlab-Token": headers["X-Gitlab-Token"][:-1]}
    longer = {**headers, "X-Gitlab-Token": headers["X-Gitlab-Token"] + "x"}
    empty = {**headers, "X-Gitlab-Token": ""}
    return [wrong, missing, prefix, longer, empty]


def _forged_github() -> list[tuple[dict[str, str], bytes]]:
    headers, body = github_event()
    other_body = body.replace(b"synchronize", b"opened")
    sig = headers["X-Hub-Signature-256"]
    return [
        ({**headers, "X-Hub-Signature-256": github_signature("wrong-secret", body)}, body),
        ({k: v for k, v in headers.items() if k != "X-Hub-Signature-256"}, body),
        (headers, other_body),  # signature over a different body
        ({**headers, "X-Hub-Signature-256": sig[:-1]}, body),  # truncated
        ({**headers, "X-Hub-Signature-256": sig[:20]}, body),
        ({**headers, "X-Hub-Signature-256": sig.removeprefix("sha256=")}, body),
        ({**headers, "X-Hub-Signature-256": sig.upper()}, body),
        ({**headers, "X-Hub-Signature-256": ""}, body),
    ]


def test_forged_or_unsigned_requests_are_rejected_and_create_no_job(client: httpx.Client) -> None:
    _, gl_body = gitlab_event()
    statuses = [client.post("/webhook/gitlab", content=gl_body, headers=h).status_code
                for h in _forged_gitlab()]
    statuses += [client.post("/webhook/github", content=b, headers=h).status_code
                 for h, b in _forged_github()]
    # a malformed body without credentials is still refused as unauthenticated
    statuses.append(client.post("/webhook/github", content=b"{not json",
                                headers={"X-GitHub-Event": "pull_request"}).status_code)
    assert statuses == [401] * len(statuses)
    assert job_count(client) == 0
    text = client.get("/metrics").text
    assert 'reviewbot_webhook_events_rejected_total{forge="github",reason="unauthenticated"} 9.0' in text
    assert 'reviewbot_webhook_events_rejected_total{forge="gitlab",reason="unauthenticated"} 5.0' in text


def test_github_documented_test_vector(tmp_path: Path, runner: RecordingRunner) -> None:
    secret, body = "It's a Secret to Everybody", b"Hello, World!"
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert github_signature(secret, body) == expected
    settings = make_settings(tmp_path / "q.sqlite", github_secret=secret)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        headers = {"X-GitHub-Event": "ping", "X-Hub-Signature-256": expected}
        ok = c.post("/webhook/github", content=body, headers=headers)
        bad = c.post("/webhook/github", content=body + b" ", headers=headers)
    assert (ok.status_code, ok.json()["reason"]) == (200, "pong")
    assert bad.status_code == 401


@pytest.mark.parametrize(
    ("forge", "kwargs", "reason"),
    [
        ("gitlab", {"action": "update", "oldrev": False}, "not a push"),
        ("gitlab", {"action": "close"}, "'close'"),
        ("gitlab", {"action": "merge"}, "'merge'"),
        ("github", {"action": "closed"}, "'closed'"),
        ("github", {"action": "labeled"}, "'labeled'"),
        ("github", {"event": "issues"}, "'issues'"),
    ],
)
def test_other_events_are_ignored_with_200(
    client: httpx.Client, forge: str, kwargs: dict[str, Any], reason: str
) -> None:
    headers, body = gitlab_event(**kwargs) if forge == "gitlab" else github_event(**kwargs)
    r = client.post(f"/webhook/{forge}", content=body, headers=headers)
    assert r.status_code == 200 and r.json()["status"] == "ignored"
    assert reason in r.json()["reason"]
    assert job_count(client) == 0


def test_gitlab_open_and_reopen_are_accepted(client: httpx.Client) -> None:
    for i, action in enumerate(("open", "reopen")):
        headers, body = gitlab_event(iid=10 + i, action=action, oldrev=False)
        assert client.post("/webhook/gitlab", content=body, headers=headers).status_code == 202


def test_gitlab_other_hook_types_are_ignored(client: httpx.Client) -> None:
    headers, body = gitlab_event()
    r = client.post("/webhook/gitlab", content=body, headers={**headers, "X-Gitlab-Event": "Push Hook"})
    assert (r.status_code, r.json()["status"]) == (200, "ignored")


def test_malformed_json_is_400_and_bad_payload_is_400(client: httpx.Client) -> None:
    body = b'{"object_kind": "merge_request", '
    headers, _ = gitlab_event()
    assert client.post("/webhook/gitlab", content=body, headers=headers).status_code == 400
    bad = json.dumps({"object_kind": "merge_request", "object_attributes": {"action": "open"}})
    r = client.post("/webhook/gitlab", content=bad.encode(), headers=headers)
    assert (r.status_code, r.json()["reason"]) == (400, "payload lacks project.id")
    gh_body = b"\xff\xfe not utf-8"
    gh_headers = {"X-GitHub-Event": "pull_request",
                  "X-Hub-Signature-256": github_signature(GITHUB_SECRET, gh_body)}
    assert client.post("/webhook/github", content=gh_body, headers=gh_headers).status_code == 400
    assert job_count(client) == 0


def test_replayed_deliveries_make_one_job(client: httpx.Client) -> None:
    gl_headers, gl_body = gitlab_event(key="gl-delivery-1")
    gh_headers, gh_body = github_event(delivery="gh-delivery-1")
    gl = [client.post("/webhook/gitlab", content=gl_body, headers=gl_headers) for _ in range(5)]
    gh = [client.post("/webhook/github", content=gh_body, headers=gh_headers) for _ in range(5)]
    assert [r.status_code for r in gl] == [202, 200, 200, 200, 200]
    assert [r.status_code for r in gh] == [202, 200, 200, 200, 200]
    assert {r.json()["job_id"] for r in gl} == {gl[0].json()["job_id"]}
    assert {r.json()["status"] for r in gh[1:]} == {"duplicate"}
    assert job_count(client) == 2


def test_redelivery_without_idempotency_key_is_deduplicated_by_body(client: httpx.Client) -> None:
    headers, body = gitlab_event()
    del headers["Idempotency-Key"]
    codes = [client.post("/webhook/gitlab", content=body, headers=headers).status_code for _ in range(3)]
    assert codes == [202, 200, 200]


def test_body_size_limit_is_413(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", max_body_bytes=1024)
    headers, body = github_event()
    padded = body[:-1] + b', "pad": "' + b"x" * 2048 + b'"}'
    headers["X-Hub-Signature-256"] = github_signature(GITHUB_SECRET, padded)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        assert c.post("/webhook/github", content=padded, headers=headers).status_code == 413

        def chunks() -> object:  # no Content-Length: the streamed size is checked
            yield padded[:1000]
            yield padded[1000:]

        streamed = c.post("/webhook/github", content=chunks(), headers=headers)  # type: ignore[arg-type]
        assert streamed.status_code == 413
        assert sum(srv.queue.counts().values()) == 0


def test_rate_limit_per_source_is_429(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", rate_per_source=2.0)  # burst 4
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        codes = []
        started = time.monotonic()
        for i in range(30):
            headers, body = github_event(number=i)
            codes.append(c.post("/webhook/github", content=body, headers=headers).status_code)
        elapsed = time.monotonic() - started
        assert codes[:4] == [202] * 4 and 429 in codes
        assert codes.count(202) <= 4 + 2.0 * elapsed + 1
        assert codes.count(202) == sum(srv.queue.counts().values())
        assert "rate_limited" in c.get("/metrics").text


def test_allow_list_ignores_other_projects_with_200(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", allow=("team/*", "octo/app"))
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        ok_gl = c.post("/webhook/gitlab", content=gitlab_event(path="team/app")[1],
                       headers=gitlab_event()[0])
        other_gl_headers, other_gl = gitlab_event(path="elsewhere/app", project_id=9)
        no_gl = c.post("/webhook/gitlab", content=other_gl, headers=other_gl_headers)
        ok_gh = c.post("/webhook/github", content=(e := github_event(repo="Octo/App"))[1], headers=e[0])
        no_gh = c.post("/webhook/github", content=(e := github_event(repo="octo/other"))[1], headers=e[0])
    assert (ok_gl.status_code, ok_gh.status_code) == (202, 202)
    assert (no_gl.status_code, no_gl.json()["status"]) == (200, "ignored")
    assert (no_gh.status_code, no_gh.json()["status"]) == (200, "ignored")


def test_payloads_naming_another_forge_are_ignored(client: httpx.Client) -> None:
    """The review would use our forge token against the payload's URL: only known forges."""
    headers, body = gitlab_event()
    evil = body.replace(b"https://gitlab.example.com", b"https://collector.invalid")
    r = client.post("/webhook/gitlab", content=evil, headers=headers)
    assert (r.status_code, r.json()) == (200, {"status": "ignored", "reason": "forge URL not allowed"})
    headers, body = github_event()
    evil = body.replace(b"https://api.github.com", b"https://ghe.invalid/api/v3")
    headers["X-Hub-Signature-256"] = github_signature(GITHUB_SECRET, evil)
    assert client.post("/webhook/github", content=evil, headers=headers).json()["status"] == "ignored"
    assert job_count(client) == 0


def test_unconfigured_forge_is_404(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", gitlab_secret=None)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        headers, body = gitlab_event(token="")
        assert c.post("/webhook/gitlab", content=body, headers=headers).status_code == 404
        # a name no forge registered: 404, and no metric label is made of it
        for name in ("gitea", "x" * 40, "GitLab"):
            assert c.post(f"/webhook/{name}", content=body, headers=headers).status_code == 404
        metrics = c.get("/metrics").text
        assert "gitea" not in metrics and "x" * 40 not in metrics


def test_random_forgeries_never_create_a_job(tmp_path: Path, runner: RecordingRunner) -> None:
    """Property: without the secret, no token, signature or body gets anything but 401."""
    header_text = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=80)
    unthrottled = make_settings(tmp_path / "q.sqlite", rate_per_source=1e6)
    with ThreadServer(unthrottled, runner) as srv, httpx.Client(base_url=srv.url) as c:

        @settings(max_examples=150, deadline=None)
        @given(token=header_text, signature=header_text, body=st.binary(max_size=512),
               hexsig=st.text("0123456789abcdef", min_size=64, max_size=64))
        def check(token: str, signature: str, body: bytes, hexsig: str) -> None:
            _, valid = github_event()
            for forge, headers, content in (
                ("gitlab", {**gitlab_event()[0], "X-Gitlab-Token": token}, valid),
                ("github", {**github_event()[0], "X-Hub-Signature-256": signature}, body),
                ("github", {**github_event()[0], "X-Hub-Signature-256": "sha256=" + hexsig}, valid),
            ):
                r = c.post(f"/webhook/{forge}", content=content, headers=headers)
                assert r.status_code == 401, (forge, r.status_code)

        check()
        assert sum(srv.queue.counts().values()) == 0
