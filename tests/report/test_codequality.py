from __future__ import annotations

import json
from typing import Any

from reviewbot.report import render
from reviewbot.report.codequality import INCOMPLETE_CHECK
from reviewbot.result import ReviewResult

SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def report(r: ReviewResult) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(render(r, "codequality"))
    return doc


def issue(doc: list[dict[str, Any]], start: str) -> dict[str, Any]:
    [hit] = [x for x in doc if x["description"].startswith(start)]
    return hit


def test_required_keys_and_types(result: ReviewResult) -> None:
    doc = report(result)
    assert isinstance(doc, list) and len(doc) == len(result.findings)
    for x in doc:
        assert {"description", "check_name", "fingerprint", "severity", "location"} <= set(x)
        assert x["severity"] in SEVERITIES
        assert isinstance(x["location"]["path"], str) and x["location"]["path"]
        lines = x["location"]["lines"]
        assert isinstance(lines["begin"], int) and lines["begin"] >= 1
        assert lines["end"] >= lines["begin"]
    assert len({x["fingerprint"] for x in doc}) == len(doc)


def test_positions(result: ReviewResult) -> None:
    doc = report(result)
    sql = issue(doc, "SQL built")
    assert sql["location"] == {"path": "src/app.py", "lines": {"begin": 11, "end": 12}}
    assert sql["check_name"] == "reviewbot/security" and sql["severity"] == "critical"
    assert "Suggested change" in sql["content"]["body"]
    blocker = issue(doc, "Credentials")
    assert blocker["location"]["lines"] == {"begin": 12, "end": 12}
    old = issue(doc, "Removed the None check")
    assert old["location"]["lines"]["begin"] == 1
    assert "removed line 11 of the old file" in old["description"]


def test_fingerprints_are_the_findings(result: ReviewResult) -> None:
    fps = {x["fingerprint"] for x in report(result)}
    assert fps == {f.fingerprint for f in result.findings}


def test_incomplete_review_is_never_an_empty_report(incomplete: ReviewResult) -> None:
    doc = report(incomplete)
    [entry] = [x for x in doc if x["check_name"] == INCOMPLETE_CHECK]
    assert "INCOMPLETE" in entry["description"] and "HTTP 500" in entry["description"]
    assert entry["severity"] in SEVERITIES


def test_complete_empty_review_is_an_empty_array(empty: ReviewResult) -> None:
    assert report(empty) == []
