"""The GitLab checks of `reviewbot doctor`, called in this process against the fake GitLab:
what each one says on a good set-up, and the fix it names for each broken piece. The whole
command as a process, with both forges and the model server: tests/flow/test_doctor.py."""

from __future__ import annotations

import secrets

from reviewbot.checks import Status
from reviewbot.config import Settings
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.gitlab.doctor import check
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401 - fixture "env"

LISTENER = "https://reviewbot.example.com"
HOOK = {"id": 1, "url": f"{LISTENER}/webhook/gitlab/", "merge_requests_events": True,
        "note_events": True, "enable_ssl_verification": True}


def _checks(env: Env, project: str | None = "grp/proj", token: str = TOKEN,
            listener: str | None = LISTENER) -> dict[str, tuple[Status, str, str]]:
    settings = ForgeSettings.gitlab(Settings(gitlab_url=env.gitlab.url, gitlab_token=token))
    return {c.name: (c.status, c.detail, c.fix) for c in check(settings, project, listener)}


def test_a_good_set_up_names_the_user_the_project_the_role_and_the_hook(env: Env) -> None:
    env.gitlab.hooks.append(HOOK)
    checks = _checks(env)
    assert all(status is Status.OK for status, _, _ in checks.values()), checks
    assert checks["GitLab token"][1] == f"{env.gitlab.url} as @reviewbot"
    assert checks["GitLab project"][1] == "grp/proj"
    assert checks["GitLab role"][1].startswith("Maintainer")


def test_without_a_project_or_a_listener_those_checks_are_skipped(env: Env) -> None:
    assert _checks(env, project=None)["GitLab project"][0] is Status.SKIPPED
    assert _checks(env, listener=None)["GitLab hook"][0] is Status.SKIPPED


def test_a_wrong_token_an_unknown_project_and_an_unreachable_url_name_their_fix(env: Env) -> None:
    status, detail, fix = _checks(env, token="glpat-" + secrets.token_hex(10))["GitLab token"]
    assert status is Status.FAILED and "401" in detail and "REVIEWBOT_GITLAB_TOKEN" in fix
    status, detail, fix = _checks(env, project="grp/none")["GitLab project"]
    assert status is Status.FAILED and detail.startswith("grp/none: 404") and "--project" in fix
    settings = ForgeSettings.gitlab(Settings(gitlab_url="http://127.0.0.1:9", gitlab_token=TOKEN,
                                             retries=0))
    (unreachable,) = check(settings, "grp/proj", None)
    assert unreachable.name == "GitLab URL" and unreachable.status is Status.FAILED


def test_a_hook_that_does_not_verify_the_listeners_tls_fails(env: Env) -> None:
    env.gitlab.hooks.append({**HOOK, "enable_ssl_verification": False})
    status, detail, fix = _checks(env)["GitLab hook"]
    assert status is Status.FAILED and "TLS" in detail and "SSL verification on" in fix


def test_a_reporter_may_not_post_and_cannot_read_the_hooks(env: Env) -> None:
    env.gitlab.members[1] = 20
    checks = _checks(env)
    assert checks["GitLab role"][0] is Status.FAILED and checks["GitLab role"][1].startswith(
        "Reporter")
    assert checks["GitLab hook"][0] is Status.SKIPPED  # listing hooks takes a Maintainer
