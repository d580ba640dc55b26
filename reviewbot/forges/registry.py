"""The forges reviewbot talks to, one entry each: how its text names a change, which settings
it takes, and where its adapter, its doctor checks and its webhook live.

Adding a forge is a folder under `forges/` with those parts and one `register()` line below;
nothing else names a forge. The parts are imported on first use, so a review of a diff file
loads no forge at all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reviewbot.errors import UsageError
from reviewbot.forges.base import Forge, ForgeSettings, Target

if TYPE_CHECKING:
    from reviewbot.checks import Check
    from reviewbot.config import Settings
    from reviewbot.discussion import Threads


@dataclass(frozen=True)
class ForgeKind:
    name: str  # as in URLs (/webhook/<name>), history rows and Target.forge
    ref_prefix: str  # how its own text names a change: !12 on GitLab, #12 on GitHub
    settings: Callable[[Settings], ForgeSettings]  # what its adapter takes of the settings
    opener: str  # "module:function" (Target, ForgeSettings) -> Forge
    doctor: str  # "module:function" (ForgeSettings, project, listener URL) -> list[Check]
    threads: str = ""  # "module:class" (Forge, discussion id) -> conversation Threads
    # "module:attribute", a reviewbot.webhook.hooks.Hook (named, never imported here: the
    # listener reads it); "" for a forge without webhooks
    webhook: str = ""

    def open(self, target: Target, settings: Settings) -> Forge:
        forge: Forge = _load(self.opener)(target, self.settings(settings))
        return forge

    def check(self, settings: Settings, project: str | None,
              listener: str | None) -> list[Check]:
        checks: list[Check] = _load(self.doctor)(self.settings(settings), project, listener)
        return checks

    def threads_of(self, forge: Forge, discussion_id: str | None) -> Threads:
        if not self.threads:
            raise UsageError(f"answering comments is not possible on {self.name}")
        threads: Threads = _load(self.threads)(forge, discussion_id)
        return threads

    def hook(self) -> Any:
        return _load(self.webhook) if self.webhook else None


def _load(path: str) -> Any:
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


_FORGES: dict[str, ForgeKind] = {}


def register(kind: ForgeKind) -> None:
    _FORGES[kind.name] = kind


def kind(name: str) -> ForgeKind:
    try:
        return _FORGES[name]
    except KeyError:
        raise UsageError(f"unknown forge {name!r} (known: {', '.join(_FORGES)})") from None


def ref(target: Target) -> str:
    """How the forge's own text names the change: `!12` on GitLab, `#12` on GitHub."""
    return f"{kind(target.forge).ref_prefix}{target.number}"


def kinds() -> tuple[ForgeKind, ...]:
    return tuple(_FORGES.values())


register(ForgeKind("gitlab", "!", ForgeSettings.gitlab, "reviewbot.forges.gitlab.connect:open_target",
                   "reviewbot.forges.gitlab.doctor:check",
                   "reviewbot.forges.gitlab.threads:GitLabThreads", "reviewbot.webhook.hooks:GITLAB"))
register(ForgeKind("github", "#", ForgeSettings.github, "reviewbot.forges.github.connect:open_target",
                   "reviewbot.forges.github.doctor:check",
                   "reviewbot.forges.github.threads:GitHubThreads", "reviewbot.webhook.hooks:GITHUB"))
