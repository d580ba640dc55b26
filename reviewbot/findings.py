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


# test code, mocks and fixtures: by directory, or by the test frameworks' file names
_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testing", "testdata", "fixture",
              "fixtures", "mock", "mocks", "__mocks__", "__fixtures__"}
_TEST_FILE = re.compile(r"^(test_.+|.+_test|.+[._-](test|spec|mock|fixture)s?|conftest|"
                        r"mock_.+|.+(Test|Tests|Mock|IT))\.\w+$")
# a secret in a test is still a secret (a real token committed in a fixture)
_SECRET = re.compile(r"secret|token|password|passwd|credential|private key|api[ _-]?key",
                     re.IGNORECASE)
# what a finding in test code may carry above minor: the test's own correctness, when it
# speaks of the test ("the assertion never runs"); one that speaks of the product's behaviour
# ("this will panic") restates the test's data, or belongs where that code lives
_TEST_CORRECTNESS = ("bug", "concurrency")
_ABOUT_TEST = re.compile(r"\b(tests?|testing|tested|assert\w*|expect(ation)?s?|flaky|"
                         r"vacuous\w*|fixtures?|mocks?|stubs?)\b", re.IGNORECASE)


def is_test_path(path: str) -> bool:
    directory, _, name = path.rpartition("/")
    return bool(_TEST_DIRS & set(directory.split("/")) or _TEST_FILE.match(name))


def capped_severity(category: str, severity: Severity, path: str = "",
                    text: str = "") -> Severity:
    """The highest severity a finding may carry, whoever set it (the finding pass or the
    verifier): maintainability is worth a note, never a blocker; in a test, mock or fixture
    file, only the test's own correctness (a bug or race that speaks of the test) or a secret
    goes above minor (a mock server without authentication is no vulnerability)."""
    if category == "maintainability":
        return min(severity, Severity.MINOR)
    about_test = category in _TEST_CORRECTNESS and _ABOUT_TEST.search(text)
    if path and is_test_path(path) and not about_test \
            and not (category == "security" and _SECRET.search(text)):
        return min(severity, Severity.MINOR)
    return severity


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


def join_adjacent(findings: list[Finding]) -> list[Finding]:
    """Findings with the same title and body on adjacent lines (a small model repeats one
    finding on every line of a block) become one finding over those lines, with the highest
    severity and confidence; its suggestion is dropped (it was written for one line)."""
    def key(f: Finding) -> tuple[str, str, str, str, str]:
        return f.path, f.side.value, f.category, _norm(f.title), _norm(f.body)

    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: (key(f), f.line or 0)):
        last = out[-1] if out else None
        if last is not None and f.line is not None and last.line is not None \
                and key(last) == key(f) \
                and f.line <= (last.end_line or last.line) + 1:
            out[-1] = replace(
                last, end_line=max(last.end_line or last.line, f.end_line or f.line),
                severity=max(last.severity, f.severity), suggestion=None, fingerprint="",
                confidence=max((c for c in (last.confidence, f.confidence) if c is not None),
                               default=None))
        else:
            out.append(f)
    return out


def merge(findings: list[Finding]) -> list[Finding]:
    """Drop duplicates (same fingerprint; keep the most severe), sorted by path, line, severity."""
    best: dict[str, Finding] = {}
    for f in findings:
        kept = best.get(f.fingerprint)
        if kept is None or f.severity > kept.severity:
            best[f.fingerprint] = f
    return sorted(best.values(), key=lambda f: (f.path, f.line or 0, -f.severity, f.title))
