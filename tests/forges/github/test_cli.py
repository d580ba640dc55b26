"""`reviewbot review --pr` wiring: GitHub Actions defaults reach GitHubForge (service.review)."""

from __future__ import annotations

import json
from pathlib import Path

from reviewbot.config import resolve
from reviewbot.flow import service
from reviewbot.flow.select import target_of
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.forge import GitHubForge
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import Reviewer, fake_github  # noqa: F401 - fixture "fake"


def test_actions_environment_reviews_the_event_pr(fake: FakeGitHub, tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    env = {"GITHUB_API_URL": fake.base_url, "GITHUB_TOKEN": fake.token,
           "GITHUB_REPOSITORY": fake.full_name, "GITHUB_EVENT_PATH": str(event)}
    settings = resolve({}, env=env, config_path=None)
    target = target_of(mr=None, pr=None, project=None, repo=None, env=env)
    run, code = service.review(service.ReviewOrder.opened(target, settings), Reviewer(every=4))
    assert code == 0 and run.request.forge == "github" and run.request.number == 7
    assert fake.review_comments and len(fake.issue_comments) == 1
    assert all(r.authorization == f"token {fake.token}" for r in fake.requests)


def test_constructor_agreed_with_commands_forge(fake: FakeGitHub) -> None:
    settings = resolve({"github_url": fake.base_url, "github_token": fake.token}, env={})
    forge = GitHubForge(ForgeSettings.github(settings), fake.full_name, 7)
    assert forge.name == "github" and forge.fetch().number == 7
