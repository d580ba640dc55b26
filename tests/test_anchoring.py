"""Where a finding may be placed (reviewbot.anchoring), over the posting tests' diff: valid
positions kept, ranges narrowed inside one hunk, suggestions only on the new side, the rest
refused; incremental reviews place nothing on the old side."""

from __future__ import annotations

from reviewbot.anchoring import split as split_anchorable
from reviewbot.diff import Side
from tests.flow.test_posting import CHANGES, f


def test_split_anchorable_keeps_valid_positions_and_repairs_or_refuses_the_rest() -> None:
    ok, refused = split_anchorable([
        f(2), f(2, Side.OLD), f(1, Side.OLD), f(2, end=3, suggestion="x"),
        f(2, end=22, suggestion="x"),  # range across hunks: narrowed, suggestion dropped
        f(2, Side.OLD, suggestion="x"),  # suggestion on a removed line: dropped
        f(50), f(None), f(2, path="other.py"),
    ], CHANGES)
    assert [(x.line, x.side, x.end_line, x.suggestion) for x in ok] == [
        (2, Side.NEW, None, None), (2, Side.OLD, None, None), (1, Side.OLD, None, None),
        (2, Side.NEW, 3, "x"), (2, Side.NEW, None, None), (2, Side.OLD, None, None)]
    assert [(x.line, x.path) for x in refused] == [(50, "app.py"), (None, "app.py"),
                                                   (2, "other.py")]


def test_after_an_incremental_review_nothing_is_placed_on_the_old_side() -> None:
    ok, refused = split_anchorable([f(2), f(2, Side.OLD)], CHANGES, new_side_only=True)
    assert [(x.line, x.side) for x in ok] == [(2, Side.NEW)]
    assert [(x.line, x.side) for x in refused] == [(2, Side.OLD)]
