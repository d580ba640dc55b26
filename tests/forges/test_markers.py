"""The marker parser reads comment bodies: anything malformed or hostile is no marker at all."""

from __future__ import annotations

import base64
import json

import pytest

from reviewbot.forges.markers import (
    FindingMarker,
    SummaryMarker,
    encode,
    finding_marker,
    parse,
    summary_marker,
)


def _raw(payload: object) -> str:
    return f"<!-- reviewbot:{base64.b64encode(json.dumps(payload).encode()).decode()} -->"


def test_round_trip() -> None:
    assert parse("text\n\n" + FindingMarker("ab12", outdated=True).render()) == FindingMarker(
        "ab12", outdated=True)
    assert parse(SummaryMarker("f" * 40, "[]").render()) == SummaryMarker("f" * 40, "[]")


@pytest.mark.parametrize("body", [
    None, "", "<!-- reviewbot:!!!notbase64 -->",
    _raw([1, 2]), _raw({"kind": "finding"}), _raw({"kind": "finding", "fingerprint": 7}),
    _raw({"kind": "finding", "fingerprint": "x", "state": "resolved-by-mallory"}),
    _raw({"kind": "summary", "last_reviewed_sha": "head; rm -rf /"}),
    _raw({"kind": "summary", "unanchored": {"not": "a string"}}),
    _raw({"kind": "approve"}),
    "<!-- reviewbot:" + base64.b64encode(b"[" * 50_000 + b"]" * 50_000).decode()[:59_000] + " -->",
    _raw({"kind": "summary"}) + "\nsomeone's text after the marker",
    "<!-- reviewbot:" + "A" * 70_000 + " -->",
])
def test_malformed_or_misplaced_markers_are_ignored(body: str | None) -> None:
    m = parse(body)
    assert m is None or m == SummaryMarker()  # an empty summary marker carries no state
    assert finding_marker(body) is None


def test_only_the_trailing_marker_counts() -> None:
    body = encode("summary", {"last_reviewed_sha": "a" * 40}) + "\n\n" + encode(
        "summary", {"last_reviewed_sha": "b" * 40})
    assert summary_marker(body) == SummaryMarker("b" * 40)
