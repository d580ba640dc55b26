"""The summary note in memory: switching the pause, publishing, a failed review, the findings
carried in its marker (which anyone who can edit the note can change), and its size limit."""

from __future__ import annotations

import json

from reviewbot.diff import Side, parse
from reviewbot.findings import Finding, Severity
from reviewbot.forges.base import ChangeRequest
from reviewbot.forges.markers import SummaryMarker, summary_marker
from reviewbot.forges.summary import (
    PAUSED,
    PUBLISHED,
    TITLE,
    WAITING,
    SummaryInput,
    carried,
    failed_summary,
    pack,
    paused_summary,
    published_summary,
    render_summary,
    unpack,
)
from reviewbot.result import ReviewResult, RunMode, Stats
from reviewbot.withheld import Dropped, DropStage

DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _finding(path: str = "b.py", n: int = 0) -> Finding:
    return Finding(path=path, line=None, side=Side.NEW, severity=Severity.MAJOR,
                   title=f"Problem {n}", body="Why it is one.", fingerprint=f"{n:016x}")


def _input(**kw: object) -> SummaryInput:
    changes = parse(DIFF)
    request = ChangeRequest(forge="gitlab", project="g/p", number=1, title="t", head_sha="h2",
                            base_sha="b", start_sha="b", changes=changes)
    result = ReviewResult([], "The change sets x.", Stats(files_total=1, changed_lines=2))
    values: dict[str, object] = {"request": request, "result": result, "mode": RunMode.FULL,
                                 "since_sha": None, "posted": 0, "already_posted": 0,
                                 "resolved": 0, "last_reviewed_sha": "h2"}
    return SummaryInput(**{**values, **kw})  # type: ignore[arg-type]


def test_the_pause_is_switched_with_everything_else_kept() -> None:
    before = render_summary(_input())
    paused = paused_summary(before, True)
    assert PAUSED in paused and summary_marker(paused) == SummaryMarker("h2", paused=True)
    resumed = paused_summary(paused, False)
    assert PAUSED not in resumed and summary_marker(resumed) == SummaryMarker("h2")
    assert resumed == before


def test_publishing_replaces_the_waiting_part_and_keeps_the_pause() -> None:
    waiting = render_summary(_input(waiting=[_finding()], paused=True))
    assert WAITING in waiting and "Problem 0" in waiting
    published = published_summary(waiting)
    assert WAITING not in published and "Problem 0" not in published
    assert PUBLISHED in published and published.endswith(SummaryMarker("h2", paused=True).render())
    assert published.index(PUBLISHED) < published.index(PAUSED)


def test_a_failed_review_keeps_the_state_and_shows_its_reason_as_text() -> None:
    previous = paused_summary(render_summary(_input()), True)
    body = failed_summary(previous, "[click](https://evil.example) @all " + "x" * 2000)
    assert body.startswith(TITLE) and "Not reviewed" in body
    assert "](https://" not in body and "x" * 501 not in body  # escaped, capped at 500
    assert summary_marker(body) == SummaryMarker("h2", paused=True)


def test_findings_carried_in_the_marker_round_trip_bounded() -> None:
    findings = [_finding(n=n) for n in range(40)]
    back = unpack(pack(findings))
    assert [f.fingerprint for f in back] == [f.fingerprint for f in findings[:30]]
    assert back[0] == findings[0]


def test_a_marker_edited_into_nonsense_carries_nothing() -> None:
    hostile = [json.dumps([{"path": "a"}]), json.dumps({"x": 1}), "[1, 2]", "{", "null",
               json.dumps([{"path": "a", "line": 1, "side": "sideways", "severity": "major",
                            "category": "bug", "title": "t", "body": "b", "fingerprint": "f"}])]
    assert [unpack(text) for text in hostile] == [[]] * len(hostile)


def test_only_findings_on_untouched_files_and_not_found_again_are_carried() -> None:
    packed = pack([_finding("a.py", 1), _finding("b.py", 2), _finding("c.py", 3)])
    now = [_finding("c.py", 3)]
    assert [f.path for f in carried(packed, parse(DIFF), now)] == ["b.py"]


def test_a_summary_over_the_note_limit_is_cut_and_keeps_a_readable_marker() -> None:
    many = [_finding(n=n) for n in range(200)]
    body = render_summary(_input(unanchored=many, listed=many, max_chars=6000))
    assert len(body) <= 6000 and "summary cut to fit the note limit" in body
    marker = summary_marker(body)
    assert marker is not None and marker.last_reviewed_sha == "h2"


def test_dropped_candidates_are_counted_by_why_in_the_note() -> None:
    def dropped(stage: DropStage, n: int) -> Dropped:
        return Dropped(_finding(n=n), stage, "why")

    result = ReviewResult([], "", Stats(files_total=1, changed_lines=2), dropped=[
        dropped(DropStage.RESTATED, 1), dropped(DropStage.RESTATED, 2),
        dropped(DropStage.VERIFY, 3)])
    body = render_summary(_input(result=result))
    assert ("Held back: 1 candidate(s) dropped by verification; 2 candidate(s) that restated "
            "the change's own comments or notes") in body
