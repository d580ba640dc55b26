"""Reviewing a GitLab MR or a GitHub PR: pick the forge (with CI defaults), run, exit code.

`run_forge` serves `reviewbot review --mr/--pr`; `review_forge_change` serves the webhook.
Forge modules are imported lazily so that a plain diff review never loads them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from reviewbot.config import CONFIG_FILE, Settings, parse_text, resolve
from reviewbot.diff import ChangeSet
from reviewbot.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK, IncompleteReview, UsageError
from reviewbot.findings import Severity
from reviewbot.forges.base import Forge
from reviewbot.forges.run import ForgeRun, review_change_request
from reviewbot.result import ReviewResult

Reviewer = Callable[[ChangeSet], ReviewResult]
log = logging.getLogger(__name__)


def run_forge(
    settings: Settings,
    forge: Forge,
    *,
    dry_run: bool,
    reviewer: Reviewer,
    cancel: threading.Event | None = None,
) -> tuple[ForgeRun, int]:
    """Review one MR/PR and post (or, with dry_run, only compute) the comments.

    Exit code: 3 when the review or the posting is incomplete, 1 when a finding reaches
    `settings.fail_on`, else 0.
    """
    run = review_change_request(forge, reviewer, mode=settings.mode, dry_run=dry_run,
                                cancel=cancel, fail_on_skipped=settings.fail_on_skipped)
    return run, exit_code(run, settings.fail_on)


def in_ci(env: Mapping[str, str]) -> bool:
    return bool(env.get("GITLAB_CI") or env.get("GITHUB_ACTIONS"))


def settings_and_forge(
    flags: Mapping[str, Any],
    config_path: str | None,
    *,
    mr: int | None,
    pr: int | None,
    project: str | None,
    repo: str | None,
    env: Mapping[str, str] | None = None,
) -> tuple[Settings, Forge]:
    """The settings for a forge review, and the forge.

    In CI the working tree is the merge request's branch, so its `.reviewbot.toml` is the
    author's: it is ignored, and the target branch's copy is read through the forge API
    instead (an explicit `--config` in the pipeline is the pipeline's own choice).
    """
    env = os.environ if env is None else env
    if config_path or not in_ci(env):
        settings = resolve(flags, env, config_path)
        return settings, make_forge(settings, mr=mr, pr=pr, project=project, repo=repo, env=env)
    first = resolve(flags, env, file_values={})
    forge = make_forge(first, mr=mr, pr=pr, project=project, repo=repo, env=env)
    text = forge.target_file(CONFIG_FILE)
    values = parse_text(text, f"{CONFIG_FILE} of the target branch") if text else {}
    log.warning("CI: settings from %s of the target branch (%s); the working tree's copy "
                "belongs to the merge request and is ignored",
                CONFIG_FILE, "found" if text else "none there")
    return resolve(flags, env, file_values=values), forge


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
    forge_ = make_forge(settings, env={}, **ids)
    run, code = run_forge(settings, forge_, dry_run=False, reviewer=reviewer, cancel=cancel)
    if run.mode == "superseded":
        return run, code
    if code == EXIT_INCOMPLETE:
        reason = "; ".join(run.errors) or "the review did not cover the whole change"
        raise IncompleteReview(f"{forge} {project} #{number} at {run.request.head_sha[:12]}: "
                               f"incomplete: {reason}")
    return run, code
