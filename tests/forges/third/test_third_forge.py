"""A third forge added in one folder (toy.py) plus one registry line: a review, a reply and a
webhook delivery go through it, and no module of reviewbot names it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from reviewbot.choices import ReviewMode
from reviewbot.config import Settings
from reviewbot.conversation.verdicts import Action
from reviewbot.discussion import Note
from reviewbot.flow import doctor, service
from reviewbot.forges import registry
from reviewbot.forges.base import Target
from reviewbot.webhook.intake import Intake
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.ratelimit import RateLimiter
from tests.forges.github_support import Reviewer
from tests.forges.third import toy
from tests.webhook.webhook_support import make_settings

ROOT = Path(__file__).parents[3]
SECRET = "9f4c1e7a2b8d6e0f3a5c7b9d1e2f4a6c"


@pytest.fixture(autouse=True)
def toy_forge() -> Iterator[None]:
    toy.STORE.__init__()  # type: ignore[misc]
    toy.register_toy()
    yield
    registry._FORGES.pop("toy")


def test_a_review_posts_through_the_third_forge() -> None:
    order = service.ReviewOrder.opened(Target("toy", "team/app", 3), Settings())
    run, code = service.review(order, Reviewer(every=1))
    assert run.complete and code == 0 and registry.ref(order.target) == "~3"
    assert len(toy.STORE.comments) == len(run.outcome.posted) > 0
    assert toy.STORE.summary is not None and "Review complete" in toy.STORE.summary
    full = replace(order, settings=replace(order.settings, mode=ReviewMode.FULL))
    service.review(full, Reviewer(every=1))
    assert len(toy.STORE.comments) == len(run.outcome.posted)  # nothing posted twice


def test_a_member_is_answered_through_the_third_forges_threads() -> None:
    toy.STORE.notes.append(Note(7, toy.MEMBER[0], toy.MEMBER[1], "@toybot help"))
    order = service.ReviewOrder.opened(Target("toy", "team/app", 3), Settings())
    response = service.answer(order, 7, passes=lambda: pytest.fail("no model for help"),
                              reviewer=lambda: pytest.fail("no review for help"))
    assert response.action is Action.HELP and "help" in toy.STORE.replies[0].lower()


def test_a_webhook_delivery_is_queued_for_the_third_forge(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "q.sqlite", secrets={"toy": SECRET},
                             forge_urls=("https://toy.example",))
    queue = JobQueue.open(settings.database_url)
    intake = Intake(settings, queue, pool=_Pool(), metrics=Metrics(queue),  # type: ignore[arg-type]
                    limiter=RateLimiter(100, 10))
    body = json.dumps({"project": "team/app", "number": 3, "head": "b" * 40}).encode()
    forged = intake.receive("toy", {"x-toy-token": "wrong", "x-toy-event": "change"}, body)
    assert forged.status == 401
    assert intake.admit("toy", "10.0.0.1") is None
    answer = intake.receive("toy", {"x-toy-token": SECRET, "x-toy-event": "change"}, body)
    assert answer.status == 202, answer.body
    assert intake.admit("nosuch", "10.0.0.1").status == 404  # type: ignore[union-attr]


class _Pool:
    def wake(self) -> None: ...


def test_the_doctor_checks_the_third_forge_and_no_module_names_it() -> None:
    checks = registry.kind("toy").check(Settings(), "team/app", None)
    assert [c.name for c in checks] == ["toy forge"]
    assert doctor.Scope(project="team/app").projects == {"gitlab": "team/app"}
    named = [p for p in (ROOT / "reviewbot").rglob("*.py") if '"toy"' in p.read_text()]
    assert named == []
