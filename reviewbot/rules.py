"""Path-scoped review rules from the config: `[[rules]]` tables with `paths` (globs) and `text`.

```toml
[[rules]]
paths = ["src/**/*.py"]
text = "Every public function validates its arguments; raise ValueError, never assert."
```

A rule goes into the prompt of every chunk that shows a file it matches. Globs are matched
against the whole path (`*` also crosses `/`); `**/` matches zero or more folders.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reviewbot.errors import UsageError

MAX_RULES = 50
MAX_TEXT = 1000


@dataclass(frozen=True)
class Rule:
    paths: tuple[str, ...]
    text: str


def matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern) or (
        "**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("**/", "")))


def applicable(rules: Iterable[Rule], paths: Sequence[str]) -> list[Rule]:
    return [r for r in rules if any(matches(p, g) for p in paths for g in r.paths)]


def parse(value: Any, source: str) -> tuple[Rule, ...]:
    """Rules from a TOML array of tables, or from JSON text (the environment variable)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise UsageError(f"{source}: rules must be a JSON list of {{paths, text}}") from None
    if not isinstance(value, list) or len(value) > MAX_RULES:
        raise UsageError(f"{source}: rules must be a list of at most {MAX_RULES} tables")
    out = []
    for i, item in enumerate(value, 1):
        paths = item.get("paths") if isinstance(item, dict) else None
        text = item.get("text") if isinstance(item, dict) else None
        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p
                                                                 for p in paths) \
                or not isinstance(text, str) or not text.strip() \
                or set(item) - {"paths", "text"}:
            raise UsageError(f"{source}: rule {i} needs paths (globs) and text, and nothing else")
        if len(text) > MAX_TEXT:
            raise UsageError(f"{source}: rule {i} is longer than {MAX_TEXT} characters")
        out.append(Rule(tuple(paths), text.strip()))
    return tuple(out)
