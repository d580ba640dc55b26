"""The pure GitHub mappings, checked against the fake's independent diff reader."""

from __future__ import annotations

import difflib
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewbot.diff import Side, parse
from reviewbot.forges.github.positions import (
    MAX_COMMENT,
    fit_comment,
    outdated_body,
    posted_comment,
    review_comment,
)
from reviewbot.forges.markers import FindingMarker, SummaryMarker, decode
from tests.forges.github_repo import split_files
from tests.forges.github_support import finding

LINES = st.lists(st.sampled_from(["a", "b", "c", "", "x = 1", "  y"]), max_size=25)


def _diff(old: list[str], new: list[str], context: int) -> str:
    body = "".join(difflib.unified_diff([s + "\n" for s in old], [s + "\n" for s in new],
                                        "a/f.py", "b/f.py", n=context))
    return "diff --git a/f.py b/f.py\n" + body


@settings(max_examples=150, deadline=None)
@given(LINES, LINES, st.integers(0, 3), st.integers(1, 30), st.integers(0, 4),
       st.sampled_from([Side.NEW, Side.OLD]))
def test_review_comment_agrees_with_an_independent_reader(
        old: list[str], new: list[str], context: int, line: int, span: int, side: Side) -> None:
    text = _diff(old, new, context)
    if text.count("\n") < 3:
        return  # identical inputs: no diff
    changes = parse(text)
    [theirs] = split_files(text)
    gh_side = "RIGHT" if side is Side.NEW else "LEFT"
    end = line + span if span else None
    c = review_comment(finding("f.py", line, side, end=end, suggestion="z"), changes)
    hunk = theirs.hunk_index(gh_side, line)
    assert (c is not None) == (hunk is not None)
    if c is None:
        return
    assert c["side"] == gh_side and theirs.hunk_index(gh_side, c["line"]) == hunk
    if "start_line" in c:
        assert c["start_line"] == line < c["line"] == end
        assert theirs.hunk_index(c["start_side"], c["start_line"]) == hunk
    narrowed = end is not None and "start_line" not in c  # range across hunks: first line only
    assert ("```suggestion" in c["body"]) == (side is Side.NEW and not narrowed)


def test_posted_comment_reads_the_marker_and_the_outdated_state() -> None:
    body = "**major** (bug): t\n\n" + FindingMarker("abc").render()
    c = SimpleNamespace(id=5, body=body, path="p.py", side="LEFT", original_line=3,
                        original_commit_id="s1")
    posted = posted_comment(c)
    assert posted is not None
    assert (posted.fingerprint, posted.side, posted.line) == ("abc", "old", 3)
    assert not posted.resolved
    c.body = outdated_body(body, "abc")
    assert "**Outdated**" in c.body and "> **major** (bug): t" in c.body
    again = posted_comment(c)
    assert again is not None and again.resolved and again.fingerprint == "abc"
    c.body = "a human comment"
    assert posted_comment(c) is None


def test_a_long_summary_is_cut_to_githubs_limit_keeping_the_marker() -> None:
    tail = SummaryMarker("f" * 40).render()
    body = "x" * 100_000 + "\n\n" + tail
    fitted = fit_comment(body)
    assert len(fitted) <= MAX_COMMENT and fitted.endswith(tail)
    assert decode(fitted) == {"kind": "summary", "last_reviewed_sha": "f" * 40}
    assert fit_comment("short") == "short"
