"""`reviewbot doctor` for GitHub: the API URL and token, the repository, the token's right to
write pull request reviews, the repository's webhook to the listener, and the
`.reviewbot.toml` of its default branch."""

from __future__ import annotations

from typing import Any

from github import GithubException
from requests import RequestException

from reviewbot.checks import Check, settings_file
from reviewbot.config import CONFIG_FILE
from reviewbot.errors import UsageError
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.api import make_client

EVENTS = {"pull_request", "issue_comment", "pull_request_review_comment"}
TOKEN_FIX = ("use a token with Pull requests: write and Contents: read (or an App "
             "installation token) in GITHUB_TOKEN")


def check(settings: ForgeSettings, repo: str | None, listener: str | None) -> list[Check]:
    try:
        g = make_client(settings)
        login = str(g.get_user().login)
    except UsageError as exc:
        return [Check.failed("GitHub token", str(exc), TOKEN_FIX)]
    except GithubException as exc:
        if exc.status == 401:
            return [Check.failed("GitHub token", f"{settings.url} refused the token (401)",
                                 TOKEN_FIX)]
        login = settings.bot_login  # an installation token may not read /user (as the forge)
    except RequestException as exc:
        return [Check.failed("GitHub URL", f"{settings.url}: {type(exc).__name__}",
                             "check --github-url (or $GITHUB_API_URL) and that this host "
                             "reaches it")]
    checks = [Check.ok("GitHub token", f"{settings.url}" + (f" as {login}" if login else ""))]
    if repo is None:
        return [*checks, Check.skipped("GitHub repository", "give --repo to check one")]
    try:
        r = g.get_repo(repo)
        r.full_name  # noqa: B018  (loads it: a missing repository fails here)
    except (GithubException, RequestException) as exc:
        return [*checks, Check.failed("GitHub repository", f"{repo}: {_why(exc)}",
                                      "check --repo, and that the token may read it")]
    checks.append(Check.ok("GitHub repository", r.full_name))
    checks.append(_write(r, login))
    checks.append(_hook(r, listener))
    checks.append(_settings_file(r))
    return checks


def _write(r: Any, login: str) -> Check:
    if not login:
        return Check.skipped("GitHub permission", "no login to ask for (set bot_login)")
    try:
        level = str(r.get_collaborator_permission(login))
    except (GithubException, RequestException) as exc:
        return Check.skipped("GitHub permission", f"not readable with this token ({_why(exc)})")
    if level not in ("write", "maintain", "admin"):
        return Check.failed("GitHub permission", f"{login} has {level} on the repository",
                            "give the token's user write access (Pull requests: write)")
    return Check.ok("GitHub permission", f"{login} has {level}: may post reviews")


def _hook(r: Any, listener: str | None) -> Check:
    if not listener:
        return Check.skipped("GitHub webhook", "give --listener-url to check the webhook")
    want = listener.rstrip("/") + "/webhook/github"
    fix = (f"Settings → Webhooks: add {want} (application/json, the secret of "
           "$REVIEWBOT_GITHUB_WEBHOOK_SECRET) with Pull requests, Issue comments and Pull "
           "request review comments")
    try:
        hooks = [h for h in r.get_hooks() if str(h.config.get("url", "")).rstrip("/") == want]
    except GithubException as exc:
        if exc.status in (403, 404):
            return Check.skipped("GitHub webhook", "reading webhooks needs admin: check "
                                                   "Settings → Webhooks by hand")
        return Check.failed("GitHub webhook", f"listing webhooks: {_why(exc)}", fix)
    if not hooks:
        return Check.failed("GitHub webhook", f"no webhook to {want}", fix)
    hook = hooks[0]
    missing = sorted(EVENTS - set(hook.events)) if "*" not in hook.events else []
    if not hook.active or missing:
        what = "it is inactive" if not hook.active else f"it lacks {', '.join(missing)}"
        return Check.failed("GitHub webhook", f"the webhook to {want}: {what}", fix)
    if not hook.config.get("secret"):  # GitHub shows a set secret as "********"
        return Check.failed("GitHub webhook", f"the webhook to {want} has no secret",
                            "edit the webhook: set its secret to $REVIEWBOT_GITHUB_WEBHOOK_SECRET")
    if want.startswith("https:") and str(hook.config.get("insecure_ssl", "0")) != "0":
        return Check.failed("GitHub webhook", "the webhook does not verify the listener's TLS",
                            "edit the webhook: turn SSL verification on")
    return Check.ok("GitHub webhook", f"{want}: pull requests and comments")


def _settings_file(r: Any) -> Check:
    name = f"{CONFIG_FILE} on {r.default_branch}"
    try:
        found = r.get_contents(CONFIG_FILE, ref=r.default_branch)
    except GithubException as exc:
        if exc.status == 404:
            return settings_file(None, name)
        return Check.failed("project settings", f"reading {name}: {_why(exc)}",
                            "give the token Contents: read")
    if isinstance(found, list):
        return Check.failed("project settings", f"{CONFIG_FILE} is a directory",
                            f"make {CONFIG_FILE} a file")
    return settings_file(found.decoded_content.decode("utf-8", "replace"), name)


def _why(exc: Exception) -> str:
    if isinstance(exc, GithubException):
        data = exc.data if isinstance(exc.data, dict) else {}
        return f"{exc.status} {' '.join(str(data.get('message', '')).split())[:200]}".strip()
    return type(exc).__name__
