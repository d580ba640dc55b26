"""One review's outcome in memory: when it is complete, what the gate covers (held back, open
from earlier), the exit code, and the notes every output repeats."""

from __future__ import annotations

import pytest

from reviewbot.diff import Side, parse
from reviewbot.findings import Finding, Severity
from reviewbot.result import ReviewResult, Stats, Usage, exit_code
from reviewbot.withheld import LOCK_FILE, HeldTo, SkippedFile


def _finding(severity: Severity, fingerprint: str) -> Finding:
    return Finding(path="a.py", line=1, side=Side.NEW, severity=severity, title="t", body="b",
                   fingerprint=fingerprint)


@pytest.mark.parametrize(("stats", "complete"), [
    (Stats(changed_lines=4, changed_lines_sent=4), True),
    (Stats(changed_lines=4, changed_lines_sent=3), False),  # a line never reached the model
    (Stats(changed_lines=4, changed_lines_sent=4, errors=["chunk 2: timeout"]), False),
    (Stats(), True),  # nothing to review (only skipped files)
])
def test_complete_only_when_every_changed_line_reached_the_model_without_error(
        stats: Stats, complete: bool) -> None:
    assert ReviewResult([], "", stats).complete is complete
    assert stats.to_dict()["complete"] is complete


def test_a_failed_review_counts_what_was_not_reviewed() -> None:
    changes = parse("--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n-x\n+y\n+z\n")
    result = ReviewResult.failed(changes, "BackendUnreachable")
    assert not result.complete and result.findings == []
    assert (result.stats.files_total, result.stats.changed_lines) == (1, 3)
    assert "nothing was reviewed: BackendUnreachable" in result.summary


def test_held_back_findings_never_gate_and_open_earlier_ones_do() -> None:
    result = ReviewResult([_finding(Severity.CRITICAL, "c"), _finding(Severity.MINOR, "m")], "",
                          Stats(), earlier=[_finding(Severity.MAJOR, "old")])
    result.hold_back(["c", "c"], "below the noise floor")
    result.hold_back(["c"], "again")  # held once, with its first reason
    assert [h.reason for h in result.held] == ["below the noise floor"]
    assert result.held[0].to is HeldTo.NONE and result.hidden() == {"c"}
    assert [f.fingerprint for f in result.gating()] == ["m", "old"]
    assert result.worst() is Severity.MAJOR
    shown = result.to_dict()
    assert [f["held_back"] for f in shown["findings"]] == [  # type: ignore[index]
        {"to": "none", "reason": "below the noise floor"}, None]


@pytest.mark.parametrize(("complete", "worst", "fail_on", "code"), [
    (False, None, "major", 3),  # never reported as clean
    (False, Severity.CRITICAL, "major", 3),
    (True, Severity.MAJOR, "major", 1),
    (True, Severity.MINOR, "major", 0),
    (True, Severity.CRITICAL, "never", 0),
    (True, None, "info", 0),
])
def test_exit_code(complete: bool, worst: Severity | None, fail_on: str, code: int) -> None:
    assert exit_code(complete, worst, fail_on) == code


def test_skipped_and_cut_notes() -> None:
    stats = Stats(files_skipped=[SkippedFile("Cargo.lock", LOCK_FILE, source=True),
                                 SkippedFile("b.lock", LOCK_FILE, source=True),
                                 SkippedFile("logo.png", "binary", source=True),
                                 SkippedFile("gen.pb.go", "generated", source=False)],
                  changed_lines_cut=1, chars_cut=12345)
    assert stats.skipped_note() == "2 lock files not reviewed, 1 other changed file not reviewed"
    assert stats.cut_note() == ("1 changed line(s) longer than a request were shown cut short: "
                                "12,345 characters not reviewed")
    assert Stats().skipped_note() == "" and Stats().cut_note() == ""


def test_usage_adds_up() -> None:
    total = Usage(10, 2, 4) + Usage(5, 1, 0)
    assert total == Usage(15, 3, 4)
