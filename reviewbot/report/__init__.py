"""Renderers of a review result."""

from __future__ import annotations

import importlib

from reviewbot.choices import OUTPUTS
from reviewbot.result import ReviewResult

# One module per format of choices.OUTPUTS, each with `render(result) -> str`; imported on
# first use so that `--output json` never pays for rich.


def render(result: ReviewResult, fmt: str, *, color: bool = False) -> str:
    """The whole report as one string ending in a newline, ready to write to stdout or a file.

    `color` only matters for `text`: pass True when the string goes straight to a terminal.
    """
    if fmt not in OUTPUTS:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(OUTPUTS)}")
    module = importlib.import_module(f"reviewbot.report.{fmt}")
    if fmt == "text":
        return str(module.render(result, color=color))
    return str(module.render(result))
