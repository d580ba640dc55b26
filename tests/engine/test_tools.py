"""The tools' JSON schemas, in memory and checked by a JSON-Schema validator (what a guided
decoder holds the model to): rows only of the chunk, at most `cap` findings, known categories,
the analysis before the findings, and the verification's keys each exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from reviewbot.engine.tools import (
    MIN_FINDINGS,
    findings_cap,
    report_tool,
    requiring,
    row_schema,
    verify_schema,
)


class _Rows:
    """What report_tool reads of a chunk: its rows (two runs of consecutive lines)."""

    def rows(self) -> list[int]:
        return [3, 4, 5, 9, 10]


def _report(cap: int = 2, analysis: bool = False) -> dict[str, Any]:
    tool = report_tool(_Rows(), cap, ("bug", "security"), analysis)  # type: ignore[arg-type]
    params: dict[str, Any] = tool["function"]["parameters"]
    Draft202012Validator.check_schema(params)
    return params


def _finding(row: int = 4, **kw: object) -> dict[str, object]:
    return {"row": row, "title": "t", "body": "b", "category": "bug", "severity": "major",
            "confidence": 0.8, **kw}


def _valid(schema: dict[str, Any], answer: dict[str, object]) -> bool:
    return Draft202012Validator(schema).is_valid(answer)


def test_a_finding_may_name_only_the_chunks_rows() -> None:
    schema = _report()
    assert _valid(schema, {"findings": [_finding(4), _finding(10, end_row=9)], "summary": "s"})
    for row in (2, 6, 8, 11):  # before, between and after the chunk's runs
        assert not _valid(schema, {"findings": [_finding(row)], "summary": "s"})


@pytest.mark.parametrize("answer", [
    {"findings": [_finding()] * 3, "summary": "s"},  # over the cap
    {"findings": [_finding(category="style")], "summary": "s"},  # not a category of the run
    {"findings": [_finding(severity="urgent")], "summary": "s"},
    {"findings": [_finding(confidence=1.5)], "summary": "s"},
    {"findings": [_finding(title="x" * 121)], "summary": "s"},
    {"findings": [{**_finding(), "shell": "rm -rf /"}], "summary": "s"},  # no extra property
    {"findings": []},  # the summary is required
])
def test_what_the_schema_refuses(answer: dict[str, object]) -> None:
    assert not _valid(_report(), answer)


def test_the_analysis_comes_before_the_findings_when_asked_for() -> None:
    assert list(_report(analysis=True)["properties"]) == ["analysis", "findings", "summary"]
    assert list(_report()["properties"]) == ["findings", "summary"]
    assert not _valid(_report(analysis=True), {"findings": [], "summary": "s"})


def test_row_schema_is_one_range_or_a_few() -> None:
    assert row_schema([7, 5, 6]) == {"type": "integer", "minimum": 5, "maximum": 7}
    assert row_schema([1, 2, 4]) == {"type": "integer", "anyOf": [
        {"minimum": 1, "maximum": 2}, {"minimum": 4, "maximum": 4}]}


@pytest.mark.parametrize(("lines", "bound", "cap"), [
    (1, 20, MIN_FINDINGS), (25 * 12, 20, 12), (10_000, 20, 20), (1, 3, 3)])
def test_findings_cap(lines: int, bound: int, cap: int) -> None:
    assert findings_cap(lines, bound) == cap


def test_requiring_sets_a_minimum_on_the_named_tool_only_and_copies() -> None:
    tools = [report_tool(_Rows(), 4), report_tool(_Rows(), 4)]  # type: ignore[arg-type]
    tools[1] = {**tools[1], "function": {**tools[1]["function"], "name": "other"}}
    out = requiring(tools, "report_findings", "findings", 1)
    defs = [t["function"]["parameters"]["$defs"]["findings"] for t in out]
    assert defs[0]["minItems"] == 1 and "minItems" not in defs[1]
    assert "minItems" not in tools[0]["function"]["parameters"]["$defs"]["findings"]


def test_each_candidate_gets_exactly_one_verdict() -> None:
    schema = verify_schema(2)
    Draft202012Validator.check_schema(schema)
    verdict = {"reason": "r", "keep": True, "severity": "minor", "confidence": 0.5}
    assert _valid(schema, {"verdicts": {"1": verdict, "2": verdict}})
    assert not _valid(schema, {"verdicts": {"1": verdict}})  # one skipped
    assert not _valid(schema, {"verdicts": {"1": verdict, "2": verdict, "3": verdict}})

