"""The worker pool over real HTTP: coalescing, retries with backoff, bounded concurrency."""

from __future__ import annotations

from pathlib import Path

import httpx

from reviewbot.errors import BackendUnreachable, ForgeError, UsageError
from reviewbot.webhook.jobs import Job
from tests.webhook.recording_runner import RecordingRunner, recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    ThreadServer,
    github_event,
    gitlab_event,
    make_settings,
    wait_for,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def settled(srv: ThreadServer) -> bool:
    counts = srv.queue.counts()
    return counts["queued"] == 0 and counts["running"] == 0


def test_burst_of_20_pushes_to_one_mr_gives_one_review_of_the_newest_head(tmp_path: Path) -> None:
    runner = RecordingRunner(tmp_path / "reviews.sqlite", delay=2.0)  # a review is slow
    heads = [f"{i:040x}" for i in range(1, 21)]
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        codes = []
        for sha in heads:
            headers, body = gitlab_event(project_id=5, iid=1, sha=sha)
            codes.append(c.post("/webhook/gitlab", content=body, headers=headers).status_code)
        wait_for(lambda: settled(srv))
        jobs = c.get("/jobs", headers=ADMIN).json()["jobs"]
    assert codes == [202] * 20
    assert recorded(runner.db) == [(jobs[0]["id"], "gitlab", "5", 1, heads[-1])]
    states = sorted(j["state"] for j in jobs)
    assert states == ["done"] + ["superseded"] * 19
    assert all(j["superseded_by"] for j in jobs if j["state"] == "superseded")


def test_running_review_is_cancelled_when_a_newer_push_arrives(tmp_path: Path) -> None:
    runner = RecordingRunner(tmp_path / "reviews.sqlite",
                             delay=lambda job: 30.0 if job.head_sha == "1" * 40 else 0.0)
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        first = c.post("/webhook/github", content=(e := github_event(sha="1" * 40))[1], headers=e[0])
        wait_for(lambda: srv.queue.counts()["running"] == 1)
        c.post("/webhook/github", content=(e := github_event(sha="2" * 40))[1], headers=e[0])
        wait_for(lambda: settled(srv))
        old = c.get(f"/jobs/{first.json()['job_id']}", headers=ADMIN).json()
    assert old["state"] == "superseded"
    assert [r[4] for r in recorded(runner.db)] == ["2" * 40]


def test_different_changes_are_not_coalesced(tmp_path: Path) -> None:
    runner = RecordingRunner(tmp_path / "reviews.sqlite")
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        for number in (1, 2):
            c.post("/webhook/github", content=(e := github_event(number=number))[1], headers=e[0])
        c.post("/webhook/gitlab", content=(e := gitlab_event(iid=1))[1], headers=e[0])
        wait_for(lambda: len(recorded(runner.db)) == 3)


def test_retryable_failures_are_retried_then_succeed(tmp_path: Path) -> None:
    def flaky(job: Job, attempt: int) -> None:
        if attempt < 3:
            raise BackendUnreachable("vLLM at http://127.0.0.1:1 refused the connection")

    runner = RecordingRunner(tmp_path / "reviews.sqlite", behave=flaky)
    settings = make_settings(tmp_path / "q.sqlite", max_attempts=3, retry_backoff_s=0.05)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        job_id = c.post("/webhook/github", content=(e := github_event())[1], headers=e[0]).json()["job_id"]
        wait_for(lambda: settled(srv))
        job = c.get(f"/jobs/{job_id}", headers=ADMIN).json()
        assert 'reviewbot_webhook_reviews_total{outcome="retried"} 2.0' in c.get("/metrics").text
    assert (job["state"], job["attempts"]) == ("done", 3)
    assert len(recorded(runner.db)) == 1


def test_retries_give_up_with_a_reason(tmp_path: Path) -> None:
    def down(job: Job, attempt: int) -> None:
        raise ForgeError("GitLab answered 502", status=502)

    runner = RecordingRunner(tmp_path / "reviews.sqlite", behave=down)
    settings = make_settings(tmp_path / "q.sqlite", max_attempts=3, retry_backoff_s=0.05)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        job_id = c.post("/webhook/gitlab", content=(e := gitlab_event())[1], headers=e[0]).json()["job_id"]
        failed_metric = 'reviewbot_webhook_reviews_total{outcome="failed"} 1.0'
        wait_for(lambda: failed_metric in c.get("/metrics").text)
        job = c.get(f"/jobs/{job_id}", headers=ADMIN).json()
    assert (job["state"], job["attempts"]) == ("failed", 3)
    assert job["reason"] == "after 3 attempt(s): ForgeError: GitLab answered 502"
    assert runner.calls == [job_id] * 3


def test_permanent_errors_fail_at_once(tmp_path: Path) -> None:
    def refused(job: Job, attempt: int) -> None:
        if job.number == 1:
            raise ForgeError("GitHub answered 404 for octo/app#1", status=404)
        raise UsageError("model 'x' is not served")

    runner = RecordingRunner(tmp_path / "reviews.sqlite", behave=refused)
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        for number in (1, 2):
            c.post("/webhook/github", content=(e := github_event(number=number))[1], headers=e[0])
        wait_for(lambda: settled(srv))
        jobs = c.get("/jobs", headers=ADMIN).json()["jobs"]
    assert [(j["state"], j["attempts"]) for j in jobs] == [("failed", 1), ("failed", 1)]
    assert "404" in jobs[1]["reason"] and "not served" in jobs[0]["reason"]


def test_a_crashing_runner_fails_the_job_and_the_pool_goes_on(tmp_path: Path) -> None:
    def buggy(job: Job, attempt: int) -> None:
        if job.number == 1:
            raise KeyError("bug")

    runner = RecordingRunner(tmp_path / "reviews.sqlite", behave=buggy)
    with ThreadServer(make_settings(tmp_path / "q.sqlite"), runner) as srv, \
            httpx.Client(base_url=srv.url) as c:
        for number in (1, 2):
            c.post("/webhook/github", content=(e := github_event(number=number))[1], headers=e[0])
        wait_for(lambda: settled(srv))
        jobs = c.get("/jobs", headers=ADMIN).json()["jobs"]
    assert [j["state"] for j in jobs] == ["done", "failed"]
    assert jobs[1]["reason"] == "after 1 attempt(s): KeyError: 'bug'"


def test_concurrency_is_bounded_in_total_and_per_forge(tmp_path: Path) -> None:
    runner = RecordingRunner(tmp_path / "reviews.sqlite", delay=0.5)
    settings = make_settings(tmp_path / "q.sqlite", workers=3, per_forge=2)
    with ThreadServer(settings, runner) as srv, httpx.Client(base_url=srv.url) as c:
        for number in range(6):
            c.post("/webhook/github", content=(e := github_event(number=number))[1], headers=e[0])
            c.post("/webhook/gitlab", content=(e := gitlab_event(iid=number))[1], headers=e[0])
        wait_for(lambda: settled(srv), timeout=20)
    assert len(recorded(runner.db)) == 12
    assert runner.peak["total"] == 3
    assert runner.peak["github"] == 2 and runner.peak["gitlab"] == 2
