"""The GitHub checks of `reviewbot doctor`, called in this process against the fake GitHub:
an installation token that may not read /user, and the webhook's and settings file's faults
each with its fix. The whole command as a process: tests/flow/test_doctor.py."""

from __future__ import annotations

from reviewbot.checks import Status
from reviewbot.config import Settings
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.doctor import check
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import fake_github  # noqa: F401 - fixture "fake"

LISTENER = "https://reviewbot.example.com"
HOOK = {"id": 9, "active": True,
        "events": ["pull_request", "issue_comment", "pull_request_review_comment"],
        "config": {"url": f"{LISTENER}/webhook/github", "secret": "********",
                   "insecure_ssl": "0"}}


def _checks(fake: FakeGitHub, repo: str | None = "acme/widgets", **over: object
            ) -> dict[str, tuple[Status, str, str]]:
    settings = ForgeSettings.github(Settings(github_url=fake.base_url, github_token=fake.token,
                                             retries=0, **over))  # type: ignore[arg-type]
    return {c.name: (c.status, c.detail, c.fix) for c in check(settings, repo, LISTENER)}


def _admin_with(fake: FakeGitHub, hook: dict[str, object]) -> None:
    fake.permissions["reviewbot[bot]"] = "admin"  # only an admin may list webhooks
    fake.hooks.append(hook)


def test_a_good_set_up_passes_every_check(fake: FakeGitHub) -> None:
    _admin_with(fake, HOOK)
    checks = _checks(fake)
    assert all(status is Status.OK for status, _, _ in checks.values()), checks
    assert checks["GitHub permission"][1] == "reviewbot[bot] has admin: may post reviews"


def test_an_installation_token_is_checked_as_the_bot_login_it_writes_as(fake: FakeGitHub) -> None:
    fake.user_forbidden = True  # GET /user answers 403, as to an Actions token
    checks = _checks(fake, github_bot_login="reviewbot[bot]")
    assert checks["GitHub token"] == (Status.OK, f"{fake.base_url} as reviewbot[bot]", "")
    assert checks["GitHub permission"][0] is Status.OK


def test_an_unknown_repository_and_no_repository(fake: FakeGitHub) -> None:
    status, detail, fix = _checks(fake, repo="acme/none")["GitHub repository"]
    assert status is Status.FAILED and detail.startswith("acme/none: 404") and "--repo" in fix
    assert _checks(fake, repo=None)["GitHub repository"][0] is Status.SKIPPED


def test_every_event_is_enough_and_an_inactive_or_insecure_hook_fails(fake: FakeGitHub) -> None:
    _admin_with(fake, {**HOOK, "events": ["*"]})
    assert _checks(fake)["GitHub webhook"][0] is Status.OK
    fake.hooks[0] = {**HOOK, "active": False}
    status, detail, _ = _checks(fake)["GitHub webhook"]
    assert status is Status.FAILED and detail.endswith("it is inactive")
    fake.hooks[0] = {**HOOK, "config": {**HOOK["config"], "insecure_ssl": "1"}}  # type: ignore[dict-item]
    status, detail, fix = _checks(fake)["GitHub webhook"]
    assert status is Status.FAILED and "TLS" in detail and "SSL verification on" in fix


def test_a_settings_file_that_is_a_directory_fails(fake: FakeGitHub) -> None:
    fake.repo.write(".reviewbot.toml/inside.txt", "x\n")
    fake.repo.commit("a directory by the settings file's name")
    status, detail, fix = _checks(fake)["project settings"]
    assert status is Status.FAILED and "is a directory" in detail and "a file" in fix
