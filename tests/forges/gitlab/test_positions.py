"""GitLab's positions, in memory: line codes counted as GitLab counts them, which of
`old_line`/`new_line` each kind of line sends, multi-line ranges anchored on their last line, and
a posted note read back (the fake GitLab checks the same rules over HTTP in test_post.py)."""

from __future__ import annotations

import hashlib

import pytest

from reviewbot.diff import FileDiff, Side, parse
from reviewbot.findings import Finding, Severity
from reviewbot.forges.base import ChangeRequest
from reviewbot.forges.gitlab.positions import line_codes, note_payload, position, posted_comment

RENAMED = """\
diff --git a/old.py b/new.py
similarity index 80%
rename from old.py
rename to new.py
--- a/old.py
+++ b/new.py
@@ -10,4 +10,5 @@ def f():
     one = 1
-    two = 2
+    two = 3
+    three = 3
     four = 4
     five = 5
"""
SHA = hashlib.sha1(b"new.py").hexdigest()


def _file() -> FileDiff:
    return parse(RENAMED).files[0]


def _request() -> ChangeRequest:
    return ChangeRequest(forge="gitlab", project="g/p", number=1, title="t", head_sha="h" * 40,
                         base_sha="b" * 40, start_sha="s" * 40, changes=parse(RENAMED))


def _finding(line: int, side: Side = Side.NEW, end_line: int | None = None,
             suggestion: str | None = None) -> Finding:
    return Finding(path="new.py", line=line, side=side, severity=Severity.MAJOR, title="Wrong",
                   body="Two is not three.", end_line=end_line, suggestion=suggestion,
                   fingerprint="f" * 16)


def test_line_codes_use_the_running_counter_of_the_other_side() -> None:
    codes = {(line.kind, line.text.strip()): code for line, code in line_codes(_file()).items()}
    assert codes == {(" ", "one = 1"): (10, 10), ("-", "two = 2"): (11, 11),
                     ("+", "two = 3"): (12, 11), ("+", "three = 3"): (12, 12),
                     (" ", "four = 4"): (12, 13), (" ", "five = 5"): (13, 14)}


@pytest.mark.parametrize(("side", "line", "sent"), [
    (Side.NEW, 11, {"new_line": 11}),  # an added line: new_line alone
    (Side.OLD, 11, {"old_line": 11}),  # a removed line: old_line alone
    (Side.NEW, 13, {"new_line": 13, "old_line": 12}),  # a context line: both
])
def test_each_kind_of_line_sends_the_lines_gitlab_expects(side: Side, line: int,
                                                          sent: dict[str, int]) -> None:
    pos = position(_request(), _file(), _finding(line, side))
    assert {k: v for k, v in pos.items() if k.endswith("_line")} == sent
    assert (pos["old_path"], pos["new_path"]) == ("old.py", "new.py")  # the rename's real old path
    assert (pos["base_sha"], pos["start_sha"], pos["head_sha"]) == ("b" * 40, "s" * 40, "h" * 40)
    assert "line_range" not in pos


def test_a_multi_line_finding_is_anchored_on_its_last_line_with_a_range() -> None:
    pos = position(_request(), _file(), _finding(11, end_line=13))
    assert pos["new_line"] == 13 and pos["old_line"] == 12
    assert pos["line_range"] == {
        "start": {"line_code": f"{SHA}_12_11", "type": "new", "new_line": 11},
        "end": {"line_code": f"{SHA}_12_13", "type": "old", "old_line": 12, "new_line": 13}}


def test_a_line_outside_the_diff_is_refused() -> None:
    with pytest.raises(ValueError, match="not a line of the diff"):
        position(_request(), _file(), _finding(40))


def test_a_suggestion_replaces_the_lines_above_its_anchor_too() -> None:
    payload = note_payload(_request(), _file(), _finding(11, end_line=12,
                                                         suggestion="    two = 2\n"))
    assert "```suggestion:-1+0\n    two = 2\n```" in payload["body"]


def _note(resolved_by: int | None) -> dict[str, object]:
    payload = note_payload(_request(), _file(), _finding(12))
    return {"id": 7, "body": payload["body"], "position": payload["position"],
            "resolved": resolved_by is not None,
            "resolved_by": {"id": resolved_by} if resolved_by is not None else None}


@pytest.mark.parametrize(("resolved_by", "by_person", "by_author"), [
    (None, False, False), (1, False, False), (2, True, True), (3, True, False)])
def test_a_posted_note_reads_back_with_who_resolved_it(resolved_by: int | None, by_person: bool,
                                                       by_author: bool) -> None:
    got = posted_comment(_note(resolved_by), "d1", dismissed=False, me=1, author=2)
    assert got is not None
    assert (got.fingerprint, got.path, got.line, got.side) == ("f" * 16, "new.py", 12, Side.NEW)
    assert got.marker is not None and got.marker.severity == "major"
    assert (got.resolved_by_person, got.resolved_by_author) == (by_person, by_author)


def test_a_note_without_the_bots_marker_is_not_the_bots() -> None:
    assert posted_comment({"id": 1, "body": "LGTM"}, "d1", False, 1, 2) is None
