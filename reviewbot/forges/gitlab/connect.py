"""A merge request, opened from its target (the registry's entry point for GitLab)."""

from __future__ import annotations

from dataclasses import replace

from reviewbot.forges.base import ForgeSettings, Target
from reviewbot.forges.gitlab.forge import GitLabForge


def open_target(target: Target, settings: ForgeSettings) -> GitLabForge:
    return GitLabForge.from_settings(replace(settings, url=target.url or settings.url),
                                     target.project, target.number)
