"""A finding anchored to the diff, its stable fingerprint, and merging across chunks."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from enum import IntEnum

from reviewbot.diff import ChangeSet, Side


class Severity(IntEnum):
    INFO = 0
    MINOR = 1
    MAJOR = 2
    CRITICAL = 3
    BLOCKER = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str) -> Severity:
        return cls[value.strip().upper()]


SEVERITIES = tuple(s.label for s in Severity)
CATEGORIES = ("bug", "security", "performance", "error-handling", "concurrency", "maintainability")


def capped_severity(category: str, severity: Severity) -> Severity:
    """The highest severity a category may carry, whoever set it (the finding pass or the
    verifier): maintainability is worth a note, never a blocker."""
    return min(severity, Severity.MINOR) if category == "maintainability" else severity


@dataclass(frozen=True)
class Finding:
    path: str
    line: int | None  # new-file line for side NEW, old-file line for side OLD; None = file level
    side: Side
    severity: Severity
    title: str
    body: str
    category: str = "bug"
    end_line: int | None = None  # last line of a multi-line finding, same side and hunk
    suggestion: str | None = None  # replacement text for lines line..end_line (new side only)
    fingerprint: str = ""
    confidence: float | None = None  # the model's, in [0, 1]; the verifier's once verified

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "side": self.side.value,
            "end_line": self.end_line,
            "severity": self.severity.label,
            "category": self.category,
            "title": self.title,
            "body": self.body,
            "suggestion": self.suggestion,
            "fingerprint": self.fingerprint,
            "confidence": self.confidence,
        }


_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


MARKED_TITLE = 200  # characters of a title the bot's comment markers keep


def topic(path: str, category: str, title: str) -> tuple[str, str, str]:
    """What a finding is about, whatever its line and code: a finding a member dismissed is
    held back when the model raises it again after the code moved (its fingerprint changed)."""
    return path, _norm(category), _norm(title[:MARKED_TITLE])


def fingerprint(finding: Finding, changes: ChangeSet) -> str:
    """Stable across pushes that move the code: path + the anchored code (normalized) + category/title.

    Line numbers are left out on purpose, so a finding keeps its identity when lines above it shift.
    """
    code = ""
    file = changes.file(finding.path)
    if file is not None and finding.line is not None:
        last = finding.end_line or finding.line
        code = "\n".join(
            _norm(dl.text)
            for n in range(finding.line, last + 1)
            if (dl := file.line_at(finding.side, n)) is not None
        )
    key = "\x1f".join((finding.path, code, _norm(finding.category), _norm(finding.title)))
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:16]


def with_fingerprints(findings: list[Finding], changes: ChangeSet) -> list[Finding]:
    """Every finding with its fingerprint (those that have one keep it)."""
    return [f if f.fingerprint else replace(f, fingerprint=fingerprint(f, changes))
            for f in findings]


def merge(findings: list[Finding]) -> list[Finding]:
    """Drop duplicates (same fingerprint; keep the most severe), sorted by path, line, severity."""
    best: dict[str, Finding] = {}
    for f in findings:
        kept = best.get(f.fingerprint)
        if kept is None or f.severity > kept.severity:
            best[f.fingerprint] = f
    return sorted(best.values(), key=lambda f: (f.path, f.line or 0, -f.severity, f.title))
