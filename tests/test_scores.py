"""The eval's figures (reviewbot.scores), pure: micro-averages over reviewed cases only, and
bootstrap intervals that hold the point estimate, are reproducible, and widen with fewer cases."""

from __future__ import annotations

from reviewbot.scores import CaseScore, Report, Score, intervals


def test_micro_averages_and_their_edges() -> None:
    total = Score()
    for s in (Score(4, 2, 1), Score(0, 3, 0), Score(2, 0, 0)):
        total.add(s)
    assert (total.findings, total.golden, total.matched) == (6, 5, 1)
    assert (round(total.precision, 4), total.recall) == (0.1667, 0.2)
    assert Score().precision == Score().recall == 1.0  # nothing found, nothing to find
    assert Score(3, 2, 0).f1 == 0.0


def test_intervals_hold_the_estimate_repeat_and_narrow_with_more_cases() -> None:
    few = [Score(2, 2, 1), Score(1, 1, 0), Score(3, 2, 2), Score(1, 2, 1)]
    total = Score()
    for s in few:
        total.add(s)
    bounds = intervals(few)
    for name in ("precision", "recall", "f1"):
        low, high = bounds[name]
        assert low <= getattr(total, name) <= high
    assert intervals(few) == bounds  # seeded: the same figures on every run
    many = intervals(few * 25)
    assert many["recall"][1] - many["recall"][0] < bounds["recall"][1] - bounds["recall"][0]
    assert intervals([]) == {"precision": (0.0, 0.0), "recall": (0.0, 0.0), "f1": (0.0, 0.0)}


def test_a_report_counts_what_was_not_reviewed_and_never_scores_it() -> None:
    report = Report(cases=[CaseScore("a", Score(1, 1, 1))],
                    not_reviewed=[("b", "the model server went away")])
    assert (report.reviewed, report.total) == (1, 2)
    assert [c.id for c in report.cases] == ["a"]
