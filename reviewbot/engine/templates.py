"""Prompt templates (sandboxed jinja2, StrictUndefined) from prompts/, or a user's directory."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from reviewbot.errors import UsageError


@lru_cache(maxsize=8)
def environment(user_dir: str | None = None) -> jinja2.Environment:
    """Templates in `user_dir` override the bundled ones of the same name."""
    if user_dir and not Path(user_dir).is_dir():
        raise UsageError(f"prompts_dir {user_dir} is not a directory")
    # sandboxed whatever the source: a user's prompts_dir, or the diff text it renders, cannot
    # run commands through it
    bundled = str(resources.files("reviewbot.prompts"))
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(d) for d in (user_dir, bundled) if d])
    return ImmutableSandboxedEnvironment(loader=loader, undefined=jinja2.StrictUndefined,
                                         autoescape=False)


def render(name: str, user_dir: str | None = None, **context: object) -> str:
    try:
        return environment(user_dir).get_template(name).render(**context).strip() + "\n"
    except jinja2.TemplateError as exc:
        raise UsageError(f"prompt template {name}: {exc}") from None
