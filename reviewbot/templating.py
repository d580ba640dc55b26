"""The one way text is rendered from templates, for prompts and for configs alike: sandboxed
jinja2 (a template, or what it renders, cannot reach Python objects) with StrictUndefined."""

from __future__ import annotations

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


def sandboxed(*directories: str, config: bool = False) -> jinja2.Environment:
    """Templates from the first of `directories` that has them. `config`: files whose bytes
    matter (trailing newline kept, block tags take their line with them)."""
    return ImmutableSandboxedEnvironment(
        loader=jinja2.ChoiceLoader([jinja2.FileSystemLoader(d) for d in directories]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=config,
        trim_blocks=config,
        lstrip_blocks=config,
    )
