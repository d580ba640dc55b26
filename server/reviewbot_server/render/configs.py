"""Config files from the templates beside this module (templates/*.j2), rendered in sandboxed
jinja2 (a template, or what it renders, cannot reach Python objects) with StrictUndefined.
Each filter escapes for its own file format."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATES = Path(__file__).with_name("templates")


def line(text: object) -> str:
    """Free text on one line: a newline in a model's name cannot start a directive."""
    return " ".join(str(text).splitlines())


def haproxy_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def printable(text: str) -> str:
    """`text` with every control character (a newline, a terminal escape) written as a C
    escape: one visible line."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256
                   else f"\\u{ord(c):04x}" for c in text)


def unit_word(arg: str) -> str:
    """Quote one ExecStart word for systemd: `%` and `$` are specifiers there, and a newline
    (or any control character) is written as a C escape, never as a line of its own."""
    escaped = printable(
        arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$"))
    quote = not arg.isprintable() or any(c in arg for c in ' "{}\'\\;')
    return f'"{escaped}"' if quote else escaped


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    # config files: their bytes matter (trailing newline kept, block tags take their line)
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
        autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(line=line, haproxy_str=haproxy_str, unit_word=unit_word)
    return env


def render(name: str, **context: object) -> str:
    return _environment().get_template(name).render(**context)
