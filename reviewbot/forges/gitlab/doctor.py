"""`reviewbot doctor` for GitLab: the URL and token, the project, the token's role on it, the
project's hook to the listener, and the `.reviewbot.toml` of its default branch."""

from __future__ import annotations

from typing import Any

import requests
from gitlab.exceptions import GitlabAuthenticationError, GitlabError

from reviewbot.checks import Check, settings_file
from reviewbot.config import CONFIG_FILE
from reviewbot.errors import UsageError
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.gitlab.api import client

DEVELOPER = 30
ROLES = {10: "Guest", 15: "Planner", 20: "Reporter", 30: "Developer", 40: "Maintainer",
         50: "Owner"}
TOKEN_FIX = ("make a project access token (role Developer, scope api) and set "
             "REVIEWBOT_GITLAB_TOKEN")


def check(settings: ForgeSettings, project: str | None, listener: str | None) -> list[Check]:
    try:
        gl = client(settings)
        gl.auth()
        user = gl.user
    except UsageError as exc:
        return [Check.failed("GitLab token", str(exc), TOKEN_FIX)]
    except GitlabAuthenticationError:
        return [Check.failed("GitLab token", f"{settings.url} refused the token (401)",
                             TOKEN_FIX)]
    except (GitlabError, requests.RequestException) as exc:
        return [Check.failed("GitLab URL", f"{settings.url}: {_why(exc)}",
                             "check --gitlab-url (or $CI_SERVER_URL) and that this host "
                             "reaches it")]
    assert user is not None
    checks = [Check.ok("GitLab token", f"{settings.url} as @{user.username}")]
    if project is None:
        return [*checks, Check.skipped("GitLab project", "give --project to check a project")]
    try:
        p = gl.projects.get(project)
    except GitlabError as exc:
        return [*checks, Check.failed("GitLab project", f"{project}: {_why(exc)}",
                                      "check --project, and that the token's user is a member")]
    checks.append(Check.ok("GitLab project", str(p.attributes.get("path_with_namespace"))))
    checks.append(_role(p, user.id))
    checks.append(_hook(p, listener))
    checks.append(_settings_file(p))
    return checks


def _role(p: Any, user_id: int) -> Check:
    try:
        level = int(p.members_all.get(user_id).attributes.get("access_level") or 0)
    except GitlabError as exc:
        return Check.failed("GitLab role", f"the token's user is no member ({_why(exc)})",
                            "add the bot's user to the project as Developer or more")
    name = ROLES.get(level, str(level))
    if level < DEVELOPER:
        return Check.failed("GitLab role", f"{name}: cannot post notes or resolve threads",
                            "give the bot's user the Developer role or more")
    return Check.ok("GitLab role", f"{name}: may post notes and resolve threads")


def _hook(p: Any, listener: str | None) -> Check:
    if not listener:
        return Check.skipped("GitLab hook", "give --listener-url to check the project's hook")
    want = listener.rstrip("/") + "/webhook/gitlab"
    fix = (f"Settings → Webhooks: add {want} with the secret token "
           "($REVIEWBOT_GITLAB_WEBHOOK_SECRET), Merge request events and Comments")
    try:
        hooks = p.hooks.list(get_all=True)
    except GitlabError as exc:
        if exc.response_code == 403:
            return Check.skipped("GitLab hook", "reading hooks needs the Maintainer role: "
                                                "check Settings → Webhooks by hand")
        return Check.failed("GitLab hook", f"listing hooks: {_why(exc)}", fix)
    mine = [h.attributes for h in hooks if str(h.attributes.get("url", "")).rstrip("/") == want]
    if not mine:
        return Check.failed("GitLab hook", f"no hook to {want}", fix)
    hook = mine[0]
    missing = [n for k, n in (("merge_requests_events", "Merge request events"),
                              ("note_events", "Comments")) if not hook.get(k)]
    if missing:
        return Check.failed("GitLab hook", f"the hook to {want} lacks {', '.join(missing)}",
                            f"edit the hook: tick {' and '.join(missing)}")
    if want.startswith("https:") and hook.get("enable_ssl_verification") is False:
        return Check.failed("GitLab hook", "the hook does not verify the listener's TLS",
                            "edit the hook: turn SSL verification on")
    return Check.ok("GitLab hook", f"{want}: merge requests and comments")


def _settings_file(p: Any) -> Check:
    branch = str(p.attributes.get("default_branch") or "")
    if not branch:
        return Check.skipped("project settings", "the project names no default branch")
    name = f"{CONFIG_FILE} on {branch}"
    try:
        raw = p.files.raw(file_path=CONFIG_FILE, ref=branch)
    except GitlabError as exc:
        if exc.response_code == 404:
            return settings_file(None, name)
        return Check.failed("project settings", f"reading {name}: {_why(exc)}",
                            "give the token read access to the repository")
    return settings_file(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw),
                         name)


def _why(exc: Exception) -> str:
    if isinstance(exc, GitlabError):
        message = " ".join(str(exc.error_message).split())[:200]
        return f"{exc.response_code} {message}".strip()
    return type(exc).__name__
