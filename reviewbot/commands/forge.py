"""Reviewing a GitLab MR or a GitHub PR: trusted settings, the forge, the run, the exit code.

`run_forge` serves `reviewbot review --mr/--pr` and the webhook's runner.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from reviewbot.config import CONFIG_FILE, Settings, in_ci, parse_text, resolve
from reviewbot.forges.base import Forge
from reviewbot.forges.run import ForgeRun, review_change_request
from reviewbot.forges.select import make_forge
from reviewbot.result import Reviewer, exit_code

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
    return run, exit_code(run.complete, run.result.worst(), settings.fail_on)


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
