"""Intake in memory: one delivery's answer and what it leaves in the queue, without a server.
The same checks over real HTTP (with a running listener) are in test_http_intake.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewbot.forges.base import ForgeName
from reviewbot.webhook.intake import NOTES_BURST, Intake
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.ratelimit import RateLimiter
from tests.webhook.webhook_support import github_event, gitlab_event, make_settings


class Pool:
    """The worker pool's two calls from the intake, recorded."""

    def __init__(self) -> None:
        self.wakes = 0
        self.cancelled: list[int] = []

    def wake(self) -> None:
        self.wakes += 1

    def cancel(self, job_ids: list[int]) -> None:
        self.cancelled.extend(job_ids)


class Desk:
    def __init__(self, tmp_path: Path, **settings: object) -> None:
        self.settings = make_settings(tmp_path / "q.sqlite", **settings)
        self.queue = JobQueue.open(self.settings.database_url)
        self.pool = Pool()
        self.metrics = Metrics(self.queue)
        self.intake = Intake(self.settings, self.queue, self.pool,  # type: ignore[arg-type]
                             self.metrics, RateLimiter(self.settings.rate_per_source, 4))

    def post(self, forge: ForgeName, event: tuple[dict[str, str], bytes],
             source: str = "10.0.0.1") -> tuple[int, dict[str, object]]:
        early = self.intake.admit(forge, source)
        answer = early or self.intake.receive(forge, {k.lower(): v for k, v in event[0].items()},
                                              event[1])
        return answer.status, answer.body

    def count(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(name + "_total", labels) or 0.0


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    made = Desk(tmp_path)
    yield made
    made.queue.close()


def test_a_valid_push_is_queued_once_and_the_pool_is_woken(desk: Desk) -> None:
    event = gitlab_event(key="delivery-1")
    status, body = desk.post("gitlab", event)
    assert (status, body["status"]) == (202, "queued") and desk.pool.wakes == 1
    assert desk.post("gitlab", event) == (200, {"status": "duplicate", "job_id": body["job_id"]})
    assert desk.pool.wakes == 1
    assert desk.count("reviewbot_webhook_events_accepted", forge="gitlab", result="created") == 1


def test_a_newer_head_supersedes_the_queued_job_of_the_same_change(desk: Desk) -> None:
    _, first = desk.post("gitlab", gitlab_event(sha="a" * 40))
    _, second = desk.post("gitlab", gitlab_event(sha="c" * 40))
    assert first["job_id"] != second["job_id"]
    assert desk.count("reviewbot_webhook_reviews", outcome="superseded") == 1


@pytest.mark.parametrize(("forge", "event"), [
    ("gitlab", gitlab_event(token="wrong-token-value")),
    ("gitlab", gitlab_event(token=None)),
    ("github", github_event(secret="another-secret-value")),
])
def test_an_unauthenticated_delivery_learns_nothing_and_queues_nothing(
        desk: Desk, forge: ForgeName, event: tuple[dict[str, str], bytes]) -> None:
    assert desk.post(forge, event) == (401, {"status": "rejected",
                                             "reason": "bad or missing token/signature"})
    assert desk.pool.wakes == 0


def test_bad_bodies_are_400_and_other_events_200_ignored(desk: Desk) -> None:
    headers, _ = gitlab_event()
    assert desk.post("gitlab", (headers, b"{not json"))[0] == 400
    assert desk.post("gitlab", (headers, json.dumps({"object_kind": "merge_request"}).encode()))[0] \
        == 400
    assert desk.post("gitlab", gitlab_event(action="close"))[1]["status"] == "ignored"
    assert desk.post("github", github_event(event="ping"))[1] == {"status": "ignored",
                                                                   "reason": "pong"}
    assert desk.pool.wakes == 0


def test_the_allow_list_and_the_forge_urls_decide_what_is_reviewed(tmp_path: Path) -> None:
    desk = Desk(tmp_path, allow=("team/app",), forge_urls=("https://gitlab.example.com",))
    assert desk.post("gitlab", gitlab_event(path="team/other"))[1]["reason"] \
        == "project not in the allow-list"
    assert desk.post("github", github_event())[1]["status"] == "ignored"
    assert desk.post("gitlab", gitlab_event())[0] == 202
    (tmp_path / "two").mkdir()
    unconfigured = Desk(tmp_path / "two", github_secret=None)
    assert unconfigured.post("github", github_event())[0] == 404


def test_a_flood_of_notes_on_one_change_is_cut_to_a_trickle(desk: Desk) -> None:
    answers = [desk.post("gitlab", _note_event(i), source=f"10.0.0.{i % 200}")[1]["status"]
               for i in range(int(NOTES_BURST) + 5)]
    assert answers.count("queued") == int(NOTES_BURST)
    assert set(answers[int(NOTES_BURST):]) == {"ignored"}


def test_a_flood_from_one_address_is_429_before_the_body_is_read(desk: Desk) -> None:
    statuses = [desk.post("gitlab", gitlab_event())[0] for _ in range(10)]
    assert 429 in statuses and statuses[0] == 202


def _note_event(i: int) -> tuple[dict[str, str], bytes]:
    headers, _ = gitlab_event()
    headers["X-Gitlab-Event"] = "Note Hook"
    body = {"object_kind": "note",
            "project": {"id": 42, "web_url": "https://gitlab.example.com/team/app",
                        "path_with_namespace": "team/app"},
            "object_attributes": {"id": 1000 + i, "noteable_type": "MergeRequest",
                                  "note": "@reviewbot help"},
            "merge_request": {"iid": 7, "last_commit": {"id": "a" * 40}}}
    return headers, json.dumps(body).encode()
