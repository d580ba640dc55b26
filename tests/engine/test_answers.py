"""Reading the model's calls, in memory, with hostile arguments: what is not an answer to the
tool asked is counted and dropped, never raised; limits hold whether or not the server guided
the decoding; rows outside the chunk re-anchor; the reply and answer tools take their first
valid call."""

from __future__ import annotations

import json

import pytest

from reviewbot.diff import Side, parse
from reviewbot.engine.answers import (
    parse_answer,
    parse_calls,
    parse_judgement,
    parse_reply,
    parse_verdicts,
)
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.tokens import EstimateTokenCounter
from reviewbot.engine.tools import MAX_ARGUMENTS
from reviewbot.findings import Severity
from tests.engine.pieces_support import make_pieces

DIFF = ("diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n"
        " import os\n-x = 1\n+x = eval(input())\n print(x)\n")
CHUNK = Chunk(1, tuple(make_pieces(parse(DIFF), EstimateTokenCounter(), 10_000)))
ADDED = next(n for n, r in CHUNK.rows().items() if r.side is Side.NEW and r.number == 2)


def _report(*findings: object, summary: str = "s") -> list[tuple[str, str]]:
    return [("report_findings", json.dumps({"findings": list(findings), "summary": summary}))]


def _item(**kw: object) -> dict[str, object]:
    return {"row": ADDED, "title": "eval of input", "body": "Runs what the user types.",
            "category": "security", "severity": "critical", "confidence": 0.9, **kw}


def test_a_finding_is_read_onto_its_line() -> None:
    out = parse_calls(_report(_item()), CHUNK, 5)
    (f,) = out.findings
    assert out.usable and (f.path, f.side, f.line, f.severity) == ("app.py", Side.NEW, 2,
                                                                   Severity.CRITICAL)


@pytest.mark.parametrize(("calls", "problem"), [
    ([("rm_rf", "{}")], "unknown tool"),
    ([("report_findings", "{not json")], "not JSON"),
    ([("report_findings", "[" * 100_000 + "]" * 100_000)], "not JSON"),  # nested too deep
    ([("report_findings", "x" * (MAX_ARGUMENTS + 1))], "too long"),
    ([("report_findings", json.dumps({"findings": "none"}))], "without a findings list"),
])
def test_what_is_no_answer_is_counted_with_its_reason(calls: list[tuple[str, str]],
                                                      problem: str) -> None:
    out = parse_calls(calls, CHUNK, 5)
    assert not out.usable and out.invalid == 1 and problem in out.problem


def test_items_past_the_cap_or_invalid_are_dropped_and_counted() -> None:
    out = parse_calls(_report(_item(), _item(category="style"), _item(severity="urgent"),
                              _item(title=""), "a string", _item(title="past the cap")), CHUNK, 5)
    assert [f.title for f in out.findings] == ["eval of input"] and out.invalid == 5


def test_limits_hold_without_a_guiding_server() -> None:
    out = parse_calls(_report(_item(title="t" * 5000, body="b" * 50_000, confidence=7,
                                    suggestion="x = 1\n" * 500)), CHUNK, 5)
    (f,) = out.findings
    assert len(f.title) <= 120 and len(f.body) <= 1200 and f.confidence == 1.0
    assert f.suggestion is None  # cut short it would be broken code: dropped whole


def test_a_suggestion_within_its_limit_is_kept_whole() -> None:
    (f,) = parse_calls(_report(_item(suggestion="x = int(input())\n")), CHUNK, 5).findings
    assert f.suggestion == "x = int(input())\n"


def test_a_row_outside_the_chunk_is_reanchored_to_the_nearest_row_of_the_file() -> None:
    out = parse_calls(_report(_item(row=ADDED + 50)), CHUNK, 5)
    assert out.reanchored == 1 and out.findings[0].path == "app.py"


def test_verdicts_only_for_the_candidates_asked_about() -> None:
    verdict = {"keep": False, "severity": "minor", "confidence": 0.4, "reason": "fine\nreally"}
    out = parse_verdicts([("verify_findings", json.dumps(
        {"verdicts": {"1": verdict, "2": {"keep": "yes"}, "99": verdict}}))], {1, 2})
    assert out.usable and list(out.by_id) == [1] and out.invalid == 2
    assert out.by_id[1].reason == "fine really"  # one line
    empty = parse_verdicts([("verify_findings", json.dumps({"verdicts": {}}))], {1})
    assert not empty.usable and "no verdict" in empty.problem


@pytest.mark.parametrize(("calls", "same"), [
    ([("same_problem", '{"same": true, "reason": "r"}')], True),
    ([("same_problem", '{"same": "yes"}'), ("same_problem", '{"same": false}')], False),
    ([("other", '{"same": true}')], None),
    ([("same_problem", "x" * (MAX_ARGUMENTS + 1))], None),
])
def test_the_judges_answer(calls: list[tuple[str, str]], same: bool | None) -> None:
    assert parse_judgement(calls) is same


def test_the_first_valid_reply_and_answer_are_taken() -> None:
    reply = parse_reply([("reply", '{"body": "x", "verdict": "maybe"}'),
                         ("reply", '{"body": "  ", "verdict": "keep"}'),
                         ("reply", json.dumps({"body": "It is fixed.", "verdict": "fixed",
                                               "learning": "l"}))])
    assert reply is not None and (reply.body, reply.verdict, reply.learning) == (
        "It is fixed.", "fixed", "l")
    assert parse_reply([("answer", '{"body": "x", "verdict": "keep"}')]) is None
    assert parse_answer([("answer", "{bad"), ("answer", '{"body": "Because."}')]) == "Because."
    assert parse_answer([("answer", '{"body": ""}')]) is None
