"""Which forge a review talks to: from flags, or from the CI environment's defaults.

Forge modules are imported lazily so that a plain diff review never loads them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from reviewbot.config import Settings
from reviewbot.errors import UsageError
from reviewbot.forges import registry
from reviewbot.forges.base import Forge, Target


def target_of(
    *,
    mr: int | None,
    pr: int | None,
    project: str | None,
    repo: str | None,
    env: Mapping[str, str] | None = None,
) -> Target:
    """The merge/pull request the flags name, with the CI environment's defaults."""
    env = os.environ if env is None else env
    if mr is not None and pr is not None:
        raise UsageError("give either --mr or --pr, not both")
    if mr is not None or (pr is None and env.get("CI_MERGE_REQUEST_IID")):
        project = project or env.get("CI_MERGE_REQUEST_PROJECT_ID") or env.get("CI_PROJECT_ID")
        iid = mr if mr is not None else _int(env.get("CI_MERGE_REQUEST_IID"), "CI_MERGE_REQUEST_IID")
        if not project:
            raise UsageError("no GitLab project: pass --project ID|PATH "
                             "(in GitLab CI it defaults to $CI_MERGE_REQUEST_PROJECT_ID)")
        return Target("gitlab", project, iid)
    number = pr if pr is not None else _pr_from_event(env)
    if number is None:
        raise UsageError("nothing to review: pass --mr IID or --pr N")
    repo = repo or env.get("GITHUB_REPOSITORY")
    if not repo:
        raise UsageError("no GitHub repository: pass --repo OWNER/NAME "
                         "(in GitHub Actions it defaults to $GITHUB_REPOSITORY)")
    return Target("github", repo, number)


def in_ci(env: Mapping[str, str]) -> bool:
    """In a GitLab or GitHub CI job, where the working tree is the change's own."""
    return bool(env.get("GITLAB_CI") or env.get("GITHUB_ACTIONS"))


def open_forge(target: Target, settings: Settings) -> Forge:
    """The adapter for `target`, from the forge registry, with the settings it takes."""
    return registry.kind(target.forge).open(target, settings)


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
