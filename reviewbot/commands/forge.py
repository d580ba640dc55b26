"""Reviewing a GitLab MR or a GitHub PR: pick the forge (with CI defaults), run, exit code.

`run_forge` serves `reviewbot review --mr/--pr`; `review_forge_change` serves the webhook.
Forge modules are imported lazily so that a plain diff review never loads them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from reviewbot.config import Settings, resolve
from reviewbot.diff import ChangeSet
from reviewbot.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, IncompleteReview, UsageError
from reviewbot.findings import Severity
from reviewbot.forges.base import Forge
from reviewbot.forges.run import ForgeRun, review_change_request
from reviewbot.result import ReviewResult

Reviewer = Callable[[ChangeSet], ReviewResult]


def run_forge(
    settings: Settings,
    *,
    mr: int | None,
    pr: int | None,
    project: str | None,
    repo: str | None,
    dry_run: bool,
    reviewer: Reviewer,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> tuple[ForgeRun, int]:
    """Review one MR/PR and post (or, with dry_run, only compute) the comments.

    Exit code: 3 when the review or the posting is incomplete, 1 when a finding reaches
    `settings.fail_on`, else 0.
    """
    forge = make_forge(settings, mr=mr, pr=pr, project=project, repo=repo, env=env)
    run = review_change_request(forge, reviewer, mode=settings.mode, dry_run=dry_run,
                                cancel=cancel)
    return run, exit_code(run, settings.fail_on)


def exit_code(run: ForgeRun, fail_on: str) -> int:
    if not run.complete:
        return EXIT_INCOMPLETE
    worst = run.result.worst()
    if fail_on != "never" and worst is not None and worst >= Severity.parse(fail_on):
        return EXIT_FINDINGS
    return EXIT_OK


def make_forge(
    settings: Settings,
    *,
    mr: int | None,
    pr: int | None,
    project: str | None,
    repo: str | None,
    env: Mapping[str, str] | None = None,
) -> Forge:
    env = os.environ if env is None else env
    if mr is not None and pr is not None:
        raise UsageError("give either --mr or --pr, not both")
    if mr is not None or (pr is None and env.get("CI_MERGE_REQUEST_IID")):
        project = project or env.get("CI_MERGE_REQUEST_PROJECT_ID") or env.get("CI_PROJECT_ID")
        iid = mr if mr is not None else _int(env.get("CI_MERGE_REQUEST_IID"), "CI_MERGE_REQUEST_IID")
        if not project:
            raise UsageError("no GitLab project: pass --project ID|PATH "
                             "(in GitLab CI it defaults to $CI_MERGE_REQUEST_PROJECT_ID)")
        from reviewbot.forges.gitlab import GitLabForge

        return GitLabForge.from_settings(settings, project, iid)
    number = pr if pr is not None else _pr_from_event(env)
    if number is None:
        raise UsageError("nothing to review: pass --mr IID or --pr N")
    repo = repo or env.get("GITHUB_REPOSITORY")
    if not repo:
        raise UsageError("no GitHub repository: pass --repo OWNER/NAME "
                         "(in GitHub Actions it defaults to $GITHUB_REPOSITORY)")
    from reviewbot.forges.github import GitHubForge

    return GitHubForge(settings, repo, number)


def _int(value: str | None, name: str) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise UsageError(f"{name} is not a number: {value!r}") from None


def _pr_from_event(env: Mapping[str, str]) -> int | None:
    """The PR number from the GitHub Actions event payload ($GITHUB_EVENT_PATH), if any."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event: Any = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the GitHub event payload {path}: {exc}") from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = (pull or {}).get("number") if isinstance(pull, dict) else None
    return number if isinstance(number, int) else None


def review_forge_change(
    forge: str,
    project: str,
    number: int,
    head_sha: str,
    forge_url: str,
    *,
    reviewer: Reviewer | None = None,
    settings: Settings | None = None,
    cancel: threading.Event | None = None,
) -> tuple[ForgeRun, int]:
    """The webhook's entry point: review and post one MR/PR; raise when it is incomplete.

    `head_sha` is the head the event announced; the current head is what gets reviewed (a later
    push supersedes it, and the summary records which head was reviewed).
    """
    if forge not in ("gitlab", "github"):
        raise UsageError(f"unknown forge {forge!r}")
    if settings is None:
        url_key = "gitlab_url" if forge == "gitlab" else "github_url"
        settings = resolve({url_key: forge_url or None})
    if reviewer is None:
        from reviewbot.review import make_reviewer

        reviewer = make_reviewer(settings)
    ids: dict[str, Any] = (
        {"mr": number, "pr": None, "project": project, "repo": None} if forge == "gitlab"
        else {"mr": None, "pr": number, "project": None, "repo": project}
    )
    run, code = run_forge(settings, dry_run=False, reviewer=reviewer, env={}, cancel=cancel, **ids)
    if run.mode == "superseded":
        return run, code
    if code == EXIT_INCOMPLETE:
        reason = "; ".join(run.errors) or "the review did not cover the whole change"
        raise IncompleteReview(f"{forge} {project} #{number} at {run.request.head_sha[:12]}: "
                               f"incomplete: {reason}")
    return run, code
