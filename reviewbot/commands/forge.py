"""`reviewbot review --mr/--pr`: the settings a forge review trusts, and the forge.

The review itself is `reviewbot.forges.run.run_forge`, which the listener's jobs call too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from reviewbot.config import CONFIG_FILE, Settings, in_ci, parse_text, resolve
from reviewbot.forges.base import Forge
from reviewbot.forges.select import make_forge

log = logging.getLogger(__name__)


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
