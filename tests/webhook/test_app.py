"""Admin, health, readiness and metrics endpoints over real HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.webhook.recording_runner import RecordingRunner
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    ThreadServer,
    free_port,
    gitlab_event,
    make_settings,
    wait_for,
)


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token", f"Basic {ADMIN_TOKEN}", f"Bearer {ADMIN_TOKEN[:-1]}", "Bearer x"],
)
def test_admin_endpoints_require_the_token(client: httpx.Client, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for path in ("/jobs", "/jobs/1"):
        r = client.get(path, headers=headers)
        assert r.status_code == 401
        assert ADMIN_TOKEN not in r.text


def test_admin_endpoints_with_the_token(client: httpx.Client) -> None:
    headers, body = gitlab_event()
    job_id = client.post("/webhook/gitlab", content=body, headers=headers).json()["job_id"]
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    listed = client.get("/jobs", headers=auth).json()
    assert [j["id"] for j in listed["jobs"]] == [job_id]
    assert client.get(f"/jobs/{job_id}", headers=auth).json()["delivery_id"].startswith("42#7@")
    assert client.get("/jobs/999", headers=auth).status_code == 404
    # beyond the database's integers: no such job either, never a 500 with a traceback
    huge = client.get("/jobs/99999999999999999999999999", headers=auth)
    assert huge.status_code == 404 and "Traceback" not in huge.text
    assert client.get("/jobs?state=bogus", headers=auth).status_code == 400
    assert client.get("/jobs?state=queued&limit=5", headers=auth).status_code == 200


def test_admin_endpoints_refuse_everyone_without_a_configured_token(
    tmp_path: Path, runner: RecordingRunner
) -> None:
    settings = make_settings(tmp_path / "q.sqlite", admin_token=None)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        assert c.get("/jobs", headers={"Authorization": "Bearer x"}).status_code == 403


def test_metrics_are_exposed(client: httpx.Client, server: ThreadServer) -> None:
    headers, body = gitlab_event()
    client.post("/webhook/gitlab", content=body, headers=headers)
    client.post("/webhook/gitlab", content=body, headers={**headers, "X-Gitlab-Token": "nope"})
    wait_for(lambda: 'reviewbot_webhook_reviews_total{outcome="done"} 1.0' in client.get("/metrics").text)
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    for line in (
        'reviewbot_webhook_events_received_total{forge="gitlab"} 2.0',
        'reviewbot_webhook_events_rejected_total{forge="gitlab",reason="unauthenticated"} 1.0',
        'reviewbot_webhook_events_accepted_total{forge="gitlab",result="created"} 1.0',
        'reviewbot_webhook_reviews_total{outcome="done"} 1.0',
        'reviewbot_webhook_jobs{state="done"} 1.0',
        "reviewbot_webhook_queue_depth 0.0",
        'reviewbot_webhook_job_latency_seconds_count{outcome="done"} 1.0',
        'reviewbot_webhook_ack_seconds_count{forge="gitlab"} 1.0',
    ):
        assert line in r.text, line


def test_healthz(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


@pytest.fixture
def fake_backend() -> Iterator[str]:
    """A real OpenAI-shaped backend on loopback that serves /v1/models."""

    async def models(request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "tiny", "object": "model"}]})

    port = free_port()
    app = Starlette(routes=[Route("/v1/models", models)])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=10)


def test_readyz_checks_database_and_backend(
    tmp_path: Path, runner: RecordingRunner, fake_backend: str
) -> None:
    up = make_settings(tmp_path / "a.sqlite", backend_url=fake_backend)
    down = make_settings(tmp_path / "b.sqlite", backend_url=f"http://127.0.0.1:{free_port()}/v1")
    unset = make_settings(tmp_path / "c.sqlite")
    with ThreadServer(up, runner) as srv, httpx.Client(base_url=srv.url) as c:
        r = c.get("/readyz")
        assert (r.status_code, r.json()["checks"]) == (200, {"database": "ok", "backend": "ok", "workers": "ok"})
    with ThreadServer(down, runner) as srv, httpx.Client(base_url=srv.url) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["backend"].startswith("backend unreachable")
        # a load balancer asks whether the replica takes events: a vLLM outage must not refuse them
        r = c.get("/readyz?for=intake")
        assert r.status_code == 200 and r.json()["checks"]["backend"].startswith("not configured")
    with ThreadServer(unset, runner) as srv, httpx.Client(base_url=srv.url) as c:
        assert c.get("/readyz").status_code == 200
