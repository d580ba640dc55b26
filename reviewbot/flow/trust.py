"""Which settings a review trusts: the one rule every entry point (the CLI, CI, `reply`, the
listener) applies.

flags > environment > the project's `.reviewbot.toml` on its target branch > the operator's
own file > defaults. In CI the working tree is the change's own, so its `.reviewbot.toml` is
the author's: never read; the target branch's copy is, through the forge (maintainers decided
it). A local review in CI (`--git A...B`) reads the file of the range's left side, A (the
target, as AGENTS.md is read); `--diff`, a single revision and `eval` read none from the
change. The listener reads each project's target-branch file per job, over its own file. A file
never sets the keys that decide where secrets go or who commands the bot
(`config.NOT_FROM_FILES`), wherever it comes from.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reviewbot import git
from reviewbot.config import CONFIG_FILE, Settings, local_values, parse_text, resolve
from reviewbot.flow.select import in_ci, open_forge, target_of
from reviewbot.flow.service import ReviewOrder
from reviewbot.forges.base import Forge, Target
from reviewbot.tree import GitTree

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Trust:
    flags: Mapping[str, Any] = field(default_factory=dict)  # only what was passed
    env: Mapping[str, str] = field(default_factory=dict)
    own: Mapping[str, Any] = field(default_factory=dict)  # the operator's file's values
    target_branch: bool = True  # read each project's file on its target branch

    @classmethod
    def for_cli(cls, flags: Mapping[str, Any], config_path: str | None,
                env: Mapping[str, str] | None = None) -> Trust:
        """A laptop's working tree is its user's own; in CI only an explicit `--config` (the
        pipeline's choice) or the target branch's file counts."""
        env = os.environ if env is None else env
        if config_path or not in_ci(env):
            return cls(flags, env, local_values(config_path), target_branch=False)
        return cls(flags, env)

    @classmethod
    def for_local(cls, flags: Mapping[str, Any], config_path: str | None,
                  git_range: str | None = None, env: Mapping[str, str] | None = None) -> Trust:
        """`review --diff/--git` and `eval`: as `for_cli`; in CI without `--config`, the file
        of a `--git` range's left side (the target), else none."""
        env = os.environ if env is None else env
        if config_path or not in_ci(env):
            return cls.for_cli(flags, config_path, env)
        base = git.range_base(git_range) if git_range else None
        text = GitTree(base).read(CONFIG_FILE) if base else None
        own = parse_text(text, f"{CONFIG_FILE} of {base}") if text else {}
        return cls(flags, env, own, target_branch=False)

    @classmethod
    def for_listener(cls, env: Mapping[str, str], config_path: str | None = None) -> Trust:
        """The listener's own file (or its working directory's) under every project's."""
        return cls({}, env, local_values(config_path))

    def base(self) -> Settings:
        """The settings before any project's file: what reaches the forge and the model."""
        return resolve(self.flags, self.env, file_values=self.own)

    def order(self, target: Target, dry_run: bool = False, source: str = "cli") -> ReviewOrder:
        """A review of `target` with the settings it runs with, and its forge: opened once,
        with the settings before the project's file (they name where it is and its token; a
        file cannot), and handed on."""
        base = self.base()
        forge = open_forge(target, base)
        settings = self._with_target_file(forge, target, base) if self.target_branch else base
        return ReviewOrder(target, settings, forge, dry_run, source)

    def _with_target_file(self, forge: Forge, target: Target, base: Settings) -> Settings:
        text = forge.target_file(CONFIG_FILE)
        values = parse_text(text, f"{CONFIG_FILE} of the target branch") if text else {}
        # louder in CI, where the working tree's copy (the author's) is ignored
        log.log(logging.WARNING if in_ci(self.env) else logging.INFO,
                "%s %s: settings from %s of the target branch (%s)", target.forge,
                target.project, CONFIG_FILE, "found" if text else "none there")
        return resolve(self.flags, self.env, file_values={**self.own, **values})


def cli_order(flags: Mapping[str, Any], config_path: str | None, *, mr: int | None,
              pr: int | None, project: str | None, repo: str | None, dry_run: bool = False,
              env: Mapping[str, str] | None = None) -> ReviewOrder:
    """`reviewbot review|reply --mr/--pr`: which MR/PR (flags, else CI variables), and the
    settings a review of it trusts."""
    trust = Trust.for_cli(flags, config_path, env)
    target = target_of(mr=mr, pr=pr, project=project, repo=repo, env=trust.env)
    return trust.order(target, dry_run)
