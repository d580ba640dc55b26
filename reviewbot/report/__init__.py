"""Renderers of a review result."""

from __future__ import annotations

import importlib

from reviewbot.result import ReviewResult

# One module per format, each with `render(result) -> str`; imported on first use so that
# `--output json` never pays for rich.
FORMATS: tuple[str, ...] = ("text", "json", "sarif", "codequality", "markdown")


def render(result: ReviewResult, fmt: str, *, color: bool = False) -> str:
    """The whole report as one string ending in a newline, ready to write to stdout or a file.

    `color` only matters for `text`: pass True when the string goes straight to a terminal.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"reviewbot.report.{fmt}")
    if fmt == "text":
        return str(module.render(result, color=color))
    return str(module.render(result))
