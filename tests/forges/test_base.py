"""The gate's rule over the bot's own threads, in memory: an open thread keeps counting until
the code changes or a member other than the change's author closes it; the author's own
resolve still counts (unless the team allows it); a dismissed finding never counts."""

from __future__ import annotations

import pytest

from reviewbot.diff import Side
from reviewbot.errors import EXIT_USAGE, ForgeError
from reviewbot.findings import Severity
from reviewbot.forges.base import AUTHOR_RESOLVED, PostedComment, still_open, unreadable_change
from reviewbot.forges.markers import FindingMarker


def _thread(fingerprint: str = "f1", severity: str = "major", **kw: object) -> PostedComment:
    marker = FindingMarker(fingerprint, severity=severity, category="bug", title="Off by one")
    values: dict[str, object] = {"id": "1", "fingerprint": fingerprint, "path": "a.py",
                                 "line": 3, "side": Side.NEW, "marker": marker, **kw}
    return PostedComment(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(("thread", "counted"), [
    (_thread(), True),  # open
    (_thread(resolved=True), False),  # resolved by the bot (the code changed)
    (_thread(resolved=True, resolved_by_person=True), False),  # by a member
    (_thread(resolved=True, resolved_by_person=True, resolved_by_author=True), True),
    (_thread(resolved=True, resolved_by_person=True, resolved_by_author=True, dismissed=True),
     False),  # a member's `ignore` or thumbs-down after the author's resolve
    (_thread(severity=""), False),  # written before markers carried a severity
])
def test_what_the_gate_still_counts(thread: PostedComment, counted: bool) -> None:
    assert bool(still_open([thread], set())) is counted


def test_a_finding_found_again_is_counted_once_by_this_review_not_twice() -> None:
    assert still_open([_thread("f1"), _thread("f2")], {"f1"})[0].fingerprint == "f2"


def test_the_authors_resolve_counts_unless_the_team_lets_authors_dismiss() -> None:
    by_author = _thread(resolved=True, resolved_by_person=True, resolved_by_author=True)
    (finding,) = still_open([by_author], set())
    assert finding.body == AUTHOR_RESOLVED and finding.severity is Severity.MAJOR
    assert (finding.path, finding.line, finding.side) == ("a.py", 3, Side.NEW)
    assert still_open([by_author], set(), author_may_dismiss=True) == []


def test_a_refusal_to_read_the_change_is_a_usage_error_with_the_forges_hint() -> None:
    hints = {404: "check the project and the number"}
    said = unreadable_change(ForgeError("GitLab: 404 Not Found", status=404), hints)
    assert said.exit_code == EXIT_USAGE and "check the project and the number" in str(said)
    other = ForgeError("GitLab: 502", status=502)
    assert unreadable_change(other, hints) is other
