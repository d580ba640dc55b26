"""Noise control (reviewbot.engine.noise): low confidence held back, low severity listed, and
only the highest-ranked findings become threads."""

from __future__ import annotations

from reviewbot.diff import Side
from reviewbot.engine.noise import Floor, triage
from reviewbot.findings import Finding, Severity
from reviewbot.withheld import HeldTo


def _f(name: str, severity: Severity, confidence: float | None = None, line: int = 1) -> Finding:
    return Finding("a.py", line, Side.NEW, severity, name, "b", fingerprint=name,
                   confidence=confidence)


def test_each_finding_goes_where_its_confidence_severity_and_rank_put_it() -> None:
    findings = [_f("unsure", Severity.CRITICAL, 0.2), _f("minor", Severity.MINOR, 0.9),
                _f("top", Severity.CRITICAL, 0.9), _f("second", Severity.MAJOR, 1.0),
                _f("third", Severity.MAJOR, 0.6), _f("unscored", Severity.MAJOR)]
    held = {h.fingerprint: h for h in triage(findings, Floor(max_inline_comments=2))}
    assert held["unsure"].to is HeldTo.NONE and "below min_confidence 0.5" in held["unsure"].reason
    assert held["minor"].to is HeldTo.SUMMARY and "inline_min_severity major" in held["minor"].reason
    # ranked by severity × confidence (none counts as 1.0): top, then second and unscored tie
    assert "top" not in held and "second" not in held
    assert held["third"].reason == held["unscored"].reason == "beyond max_inline_comments 2"


def test_a_tie_is_broken_by_place_so_the_same_findings_always_win() -> None:
    findings = [_f(f"f{line}", Severity.MAJOR, 0.8, line) for line in (9, 3, 5)]
    first = {h.fingerprint for h in triage(findings, Floor(max_inline_comments=1))}
    again = {h.fingerprint for h in triage(list(reversed(findings)), Floor(max_inline_comments=1))}
    assert first == again == {"f9", "f5"}  # line 3 is posted either way
