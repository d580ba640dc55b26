"""The body of one inline comment, shared by the host modules (pure)."""

from __future__ import annotations

import re

from reviewbot.findings import Finding
from reviewbot.forges.markers import FindingMarker
from reviewbot.modeltext import inline, prose

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.MULTILINE)


def fence_for(text: str) -> str:
    """A backtick fence longer than any fence inside `text` (at least three)."""
    longest = max((len(m.group(1)) for m in _FENCE.finditer(text) if m.group(1)[0] == "`"), default=0)
    return "`" * max(3, longest + 1)


def suggestion_block(text: str, info: str = "suggestion") -> str:
    """A suggestion block; `info` is "suggestion" (GitHub) or "suggestion:-0+N" (GitLab)."""
    fence = fence_for(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def comment_body(f: Finding, suggestion: str = "") -> str:
    """Severity and title, the explanation, an optional suggestion block, the hidden marker.

    Model text goes through `modeltext`; the suggestion is verbatim code (tools.py drops one
    that could act), and the marker comes last, where the parser looks for it."""
    parts = [f"**{f.severity.label}** ({inline(f.category)}): {inline(f.title)}"]
    if f.body.strip():
        parts.append(prose(f.body.strip()))
    if suggestion:
        parts.append(suggestion)
    parts.append(FindingMarker(f.fingerprint).render())
    return "\n\n".join(parts)
