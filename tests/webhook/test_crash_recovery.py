"""A real `reviewbot webhook` process killed with SIGKILL loses no accepted event."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx

from tests.webhook.recording_runner import recorded
from tests.webhook.webhook_support import (
    ADMIN_TOKEN,
    github_event,
    gitlab_event,
    wait_for,
    webhook_process,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def done_count(url: str) -> int:
    return int(httpx.get(f"{url}/jobs", headers=ADMIN).json()["counts"]["done"])


def _send_events(url: str) -> tuple[list[tuple[str, str, int, str]], list[tuple[dict[str, str], bytes]]]:
    """Six pushes to six different MRs/PRs; returns what should be reviewed, and the requests."""
    expected, sent = [], []
    with httpx.Client(base_url=url, timeout=10) as c:
        for i in range(3):
            headers, body = gitlab_event(project_id=100 + i, iid=i + 1, sha=f"{i:040x}")
            assert c.post("/webhook/gitlab", content=body, headers=headers).status_code == 202
            expected.append(("gitlab", str(100 + i), i + 1, f"{i:040x}"))
            sent.append((headers, body))
            headers, body = github_event(repo=f"octo/r{i}", number=i + 1, sha=f"{i + 50:040x}")
            assert c.post("/webhook/github", content=body, headers=headers).status_code == 202
            expected.append(("github", f"octo/r{i}", i + 1, f"{i + 50:040x}"))
            sent.append((headers, body))
    return expected, sent


def test_kill_9_with_jobs_queued_and_one_running_loses_nothing(tmp_path: Path) -> None:
    db, reviews, gate = tmp_path / "queue.sqlite", tmp_path / "reviews.sqlite", tmp_path / "gate"
    env = {"RECORDING_DB": str(reviews), "RECORDING_GATE": str(gate)}
    with webhook_process(db, env, "--workers", "1") as proc:
        expected, sent = _send_events(proc.url)
        wait_for(lambda: len(recorded(reviews, "start")) == 1)  # one running, blocked on the gate
        counts = httpx.get(f"{proc.url}/jobs", headers=ADMIN).json()["counts"]
        assert (counts["running"], counts["queued"]) == (1, 5)
        proc.kill9()
    assert recorded(reviews) == []
    gate.touch()
    with webhook_process(db, env, "--workers", "1") as proc:
        wait_for(lambda: done_count(proc.url) == len(expected), timeout=30)
        with httpx.Client(base_url=proc.url, timeout=10) as c:
            for headers, body in sent[:2]:  # the forge redelivers after the outage
                forge = "gitlab" if "X-Gitlab-Token" in headers else "github"
                assert c.post(f"/webhook/{forge}", content=body, headers=headers).json()["status"] == (
                    "duplicate"
                )
            jobs = c.get("/jobs", headers=ADMIN).json()
    reviewed = Counter((f, p, n, s) for _, f, p, n, s in recorded(reviews))
    assert reviewed == Counter(expected)  # every accepted event, exactly once
    assert jobs["counts"]["done"] == 6 and sum(jobs["counts"].values()) == 6
    assert any(j["attempts"] == 2 for j in jobs["jobs"])  # the one that was running


def test_sigterm_requeues_the_running_review_without_counting_an_attempt(tmp_path: Path) -> None:
    db, reviews, gate = tmp_path / "queue.sqlite", tmp_path / "reviews.sqlite", tmp_path / "gate"
    env = {"RECORDING_DB": str(reviews), "RECORDING_GATE": str(gate)}
    with webhook_process(db, env, "--workers", "1") as proc:
        headers, body = github_event()
        job_id = httpx.post(f"{proc.url}/webhook/github", content=body, headers=headers).json()["job_id"]
        wait_for(lambda: len(recorded(reviews, "start")) == 1)
    gate.touch()
    with webhook_process(db, env) as proc:
        wait_for(lambda: done_count(proc.url) == 1)
        job = httpx.get(f"{proc.url}/jobs/{job_id}", headers=ADMIN).json()
    assert (job["state"], job["attempts"]) == ("done", 1)


def test_kill_9_then_a_newer_push_supersedes_the_recovered_job(tmp_path: Path) -> None:
    db, reviews, gate = tmp_path / "queue.sqlite", tmp_path / "reviews.sqlite", tmp_path / "gate"
    env = {"RECORDING_DB": str(reviews), "RECORDING_GATE": str(gate)}
    with webhook_process(db, env) as proc:
        headers, body = gitlab_event(sha="1" * 40)
        httpx.post(f"{proc.url}/webhook/gitlab", content=body, headers=headers)
        wait_for(lambda: len(recorded(reviews, "start")) == 1)
        proc.kill9()
    with webhook_process(db, env) as proc:
        wait_for(lambda: len(recorded(reviews, "start")) == 2)  # recovered, blocked again
        headers, body = gitlab_event(sha="2" * 40)
        httpx.post(f"{proc.url}/webhook/gitlab", content=body, headers=headers)
        gate.touch()
        wait_for(lambda: done_count(proc.url) == 1)
        counts = httpx.get(f"{proc.url}/jobs", headers=ADMIN).json()["counts"]
    assert [r[4] for r in recorded(reviews)] == ["2" * 40]
    assert (counts["done"], counts["superseded"]) == (1, 1)
