"""Noise control (pure): which kept findings a forge posts as inline threads.

In order: a finding below `min_confidence` is held back (only counted); one below
`inline_min_severity` goes to the summary note's compact list; of the rest, the
`max_inline_comments` ranked highest by severity × confidence become threads and the others go
to the list. The CLI outputs keep every finding, each marked with where a forge would put it.
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewbot.findings import Finding, Severity
from reviewbot.withheld import Held, HeldTo


@dataclass(frozen=True)
class Floor:
    inline_min_severity: Severity = Severity.MAJOR
    max_inline_comments: int = 10
    min_confidence: float = 0.5


def weight(f: Finding) -> float:
    return (int(f.severity) + 1) * (1.0 if f.confidence is None else f.confidence)


def triage(findings: list[Finding], floor: Floor) -> list[Held]:
    held: list[Held] = []
    inline: list[Finding] = []
    for f in findings:
        if f.confidence is not None and f.confidence < floor.min_confidence:
            held.append(Held(f.fingerprint, HeldTo.NONE,
                             f"confidence {f.confidence:.2f} below min_confidence "
                             f"{floor.min_confidence:g}"))
        elif f.severity < floor.inline_min_severity:
            held.append(Held(f.fingerprint, HeldTo.SUMMARY,
                             f"below inline_min_severity {floor.inline_min_severity.label}"))
        else:
            inline.append(f)
    ranked = sorted(inline, key=lambda f: (-weight(f), f.path, f.line or 0))
    held += [Held(f.fingerprint, HeldTo.SUMMARY,
                  f"beyond max_inline_comments {floor.max_inline_comments}")
             for f in ranked[floor.max_inline_comments:]]
    return held
