"""`reviewbot review --mr/--pr`: the settings a forge review trusts, and which MR/PR it is.

The review itself is `reviewbot.service.review`, which the listener's jobs call too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from reviewbot.config import CONFIG_FILE, in_ci, parse_text, resolve
from reviewbot.forges.select import open_forge, target_of
from reviewbot.service import ReviewOrder

log = logging.getLogger(__name__)


def forge_order(
    flags: Mapping[str, Any],
    config_path: str | None,
    *,
    mr: int | None,
    pr: int | None,
    project: str | None,
    repo: str | None,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
) -> ReviewOrder:
    """The order for a forge review: which MR/PR, and the settings it trusts.

    In CI the working tree is the merge request's branch, so its `.reviewbot.toml` is the
    author's: it is ignored, and the target branch's copy is read through the forge API
    instead (an explicit `--config` in the pipeline is the pipeline's own choice).
    """
    env = os.environ if env is None else env
    if config_path or not in_ci(env):
        settings = resolve(flags, env, config_path)
        target = target_of(mr=mr, pr=pr, project=project, repo=repo, env=env)
        return ReviewOrder(target, settings, dry_run)
    first = resolve(flags, env, file_values={})
    target = target_of(mr=mr, pr=pr, project=project, repo=repo, env=env)
    text = open_forge(target, first).target_file(CONFIG_FILE)
    values = parse_text(text, f"{CONFIG_FILE} of the target branch") if text else {}
    log.warning("CI: settings from %s of the target branch (%s); the working tree's copy "
                "belongs to the merge request and is ignored",
                CONFIG_FILE, "found" if text else "none there")
    return ReviewOrder(target, resolve(flags, env, file_values=values), dry_run)
