"""Outdated threads (reviewbot.flow.outdated): only where this review looked again."""

from __future__ import annotations

from reviewbot.diff import Side
from reviewbot.flow.outdated import outdated
from reviewbot.forges.base import ChangeRequest, PostedComment
from reviewbot.withheld import SkippedFile
from tests.flow.test_posting import CHANGES  # its diff: two hunks of app.py


def _request(*skipped: SkippedFile) -> ChangeRequest:
    return ChangeRequest("gitlab", "g/p", 1, "t", "h2", "b", "b", CHANGES, skipped)


def test_outdated_in_full_mode_covers_reviewed_files_only() -> None:
    req = _request(SkippedFile("app.py", "too large"))
    comments = [PostedComment("1", "gone", "app.py"), PostedComment("2", "gone", "x.py")]
    assert outdated(comments, set(), CHANGES, req, since_sha=None) == []  # app.py was skipped
    req = _request()
    assert [c.id for c in outdated(comments, {"kept"}, CHANGES, req, since_sha=None)] == ["1"]


def test_outdated_in_incremental_mode_only_where_the_new_commits_changed_the_line() -> None:
    req = _request()
    comments = [
        PostedComment("changed", "a", "app.py", line=2, side=Side.NEW, head_sha="h1"),
        PostedComment("untouched", "b", "app.py", line=4, side=Side.NEW, head_sha="h1"),
        PostedComment("older head", "c", "app.py", line=2, side=Side.NEW, head_sha="h0"),
        PostedComment("unknown anchor", "d", "app.py"),
        PostedComment("resolved", "e", "app.py", resolved=True),
    ]
    got = outdated(comments, set(), CHANGES, req, since_sha="h1")
    assert [c.id for c in got] == ["changed", "unknown anchor"]
