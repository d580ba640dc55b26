"""The body of one inline comment, shared by the host modules (pure)."""

from __future__ import annotations

from reviewbot.findings import Finding
from reviewbot.forges.markers import FindingMarker
from reviewbot.modeltext import fence, inline, prose


def suggestion_block(text: str, info: str = "suggestion") -> str:
    """A suggestion block; `info` is "suggestion" (GitHub) or "suggestion:-0+N" (GitLab)."""
    bar = fence(text)  # verbatim code: the one thing in a comment model text is not escaped in
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{bar}{info}\n{body}{bar}"


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
