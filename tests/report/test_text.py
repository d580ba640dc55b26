from __future__ import annotations

from dataclasses import replace

from reviewbot.findings import Finding
from reviewbot.report import render
from reviewbot.report.text import render as render_text
from reviewbot.result import ReviewResult, Stats


def lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def test_findings_grouped_by_file(result: ReviewResult) -> None:
    out = render(result, "text")
    assert out.index("src/app.py") < out.index("SQL built from user input")
    assert "résumé | notes.md" in out
    for label in ("CRITICAL", "MAJOR", "MINOR", "INFO", "L11-12", "L11-12 old", "L2"):
        assert label in out
    assert "Suggested change:" in out and "cur.execute(" in out
    assert "BLOCKER" in out and "L12" in out


def test_skipped_files_and_stats(result: ReviewResult) -> None:
    out = render(result, "text")
    assert "Skipped files (2)" in out
    assert any("poetry.lock" in line and "lock file" in line for line in lines(out))
    flat = " ".join(out.split())  # the stats line wraps at the console width
    assert "coverage 8/8 changed lines (100.0%; 1 lock file not reviewed" in flat
    assert "12,345 prompt + 678 completion tokens" in flat
    assert "REVIEW INCOMPLETE" not in out
    assert lines(out)[-1].startswith("Review complete: 5 findings (1 blocker, 1 critical")


def test_incomplete_banner_at_both_ends(incomplete: ReviewResult) -> None:
    out = render(incomplete, "text")
    assert "REVIEW INCOMPLETE" in lines(out)[0]
    assert "REVIEW INCOMPLETE" in lines(out)[-1]
    assert "Only 6 of 8 changed lines (75.0%; 1 lock file not reviewed)" in " ".join(out.split())
    assert "HTTP 500" in out


def test_incomplete_without_findings_is_not_clean() -> None:
    stats = Stats(changed_lines=10, changed_lines_sent=0, errors=["backend unreachable"])
    out = render(ReviewResult([], "", stats), "text")
    assert "REVIEW INCOMPLETE" in out and "no findings" not in out.lower()


def test_clean_review(empty: ReviewResult) -> None:
    out = render(empty, "text")
    assert lines(out)[-1] == "✔ Review complete: no findings."
    assert "coverage 3/3 changed lines" in out


def test_the_last_line_agrees_with_findings_held_below_the_floor(result: ReviewResult) -> None:
    """The demo listed "Findings: 1 (1 major)" and then ended "✔ Review complete: no
    findings." because its one finding was below min_confidence."""
    held = replace(result, findings=result.findings[:1], earlier=[])
    held.hold_back([held.findings[0].fingerprint], "below min_confidence 0.5")
    last = lines(render(held, "text"))[-1]
    assert last == ("Review complete: no finding above the noise floor (1 held back below "
                    "min_confidence, listed above).")


def test_plain_output_has_no_escapes_and_no_trailing_blanks(result: ReviewResult) -> None:
    out = render(result, "text")
    assert "\x1b" not in out
    assert all(line == line.rstrip() for line in out.split("\n"))


def test_color_only_when_asked(incomplete: ReviewResult) -> None:
    assert "\x1b[" in render(incomplete, "text", color=True)


def test_control_characters_from_the_model_never_reach_the_terminal(
        result: ReviewResult) -> None:
    evil: Finding = replace(result.findings[0], title="ok\x1b]0;pwned\x07\x1b[2J",
                            body="line\x9b31m\x00")
    out = render_text(replace(result, findings=[evil]), color=True)
    assert "pwned" in out and "\x1b]0;" not in out and "\x1b[2J" not in out
    assert "\x9b" not in out and "\x00" not in out


def test_width_is_respected(result: ReviewResult) -> None:
    out = render_text(result, width=60)
    assert max(len(line) for line in out.split("\n")) <= 60
