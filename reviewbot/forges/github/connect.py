"""A pull request, opened from its target (the registry's entry point for GitHub)."""

from __future__ import annotations

import re
from dataclasses import replace

from reviewbot.errors import UsageError
from reviewbot.forges.base import ForgeSettings, Target
from reviewbot.forges.github.forge import GitHubForge

# GitHub's own rules: an owner of letters, digits and single hyphens; a name of those, `_`, `.`
_OWNER_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(?!\.\.?$)[A-Za-z0-9._-]{1,100}")


def open_target(target: Target, settings: ForgeSettings) -> GitHubForge:
    if not _OWNER_NAME.fullmatch(target.project):
        raise UsageError("--repo must be OWNER/NAME (letters, digits, '-', '_', '.'), "
                         f"not {target.project!r}")
    return GitHubForge(replace(settings, url=target.url or settings.url), target.project,
                       target.number)
