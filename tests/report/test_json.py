from __future__ import annotations

import json

import pytest

from reviewbot.choices import OUTPUTS
from reviewbot.report import render
from reviewbot.result import ReviewResult, Stats

# The `--output json` contract (issue 2, section 8, plus `findings_reanchored` and `model`),
# in the order written; docs/output.md documents exactly these.
TOP = ["findings", "dropped", "open_earlier", "linked_issues", "scanner_dismissed", "summary",
       "stats", "model"]
FINDING = ["path", "line", "side", "end_line", "severity", "category", "title", "body",
           "suggestion", "fingerprint", "confidence", "held_back"]
STATS = ["files_total", "files_reviewed", "files_skipped", "changed_lines", "changed_lines_sent",
         "changed_lines_cut", "chars_cut",
         "chunks", "test_pairs", "test_pairs_split", "requests", "prompt_tokens", "cached_tokens", "completion_tokens", "tool_calls_invalid",
         "answers_unusable", "findings_reanchored", "candidates", "dropped", "scanner_results",
         "scanner_confirmed", "verify_requests",
         "verify_failed", "named_requests", "summary_only", "learnings_applied",
         "wall_seconds", "server_seconds", "complete", "errors", "notes"]


def test_json_is_exactly_to_dict(result: ReviewResult) -> None:
    out = render(result, "json")
    assert out.endswith("}\n")
    assert json.loads(out) == result.to_dict()


def test_json_key_sets_and_order(result: ReviewResult) -> None:
    doc = json.loads(render(result, "json"))
    assert list(doc) == TOP
    for f in doc["findings"]:
        assert list(f) == FINDING
    assert list(doc["stats"]) == STATS
    assert all(list(s) == ["path", "reason", "source"] for s in doc["stats"]["files_skipped"])


def test_json_types_and_values(result: ReviewResult) -> None:
    doc = json.loads(render(result, "json"))
    sides = {(f["path"], f["side"], f["line"], f["end_line"]) for f in doc["findings"]}
    assert ("src/app.py", "new", 11, 12) in sides
    assert ("src/app.py", "old", 11, 12) in sides
    assert {f["severity"] for f in doc["findings"]} <= {"info", "minor", "major", "critical",
                                                         "blocker"}
    assert all(isinstance(f["fingerprint"], str) and f["fingerprint"] for f in doc["findings"])
    assert doc["stats"]["complete"] is True and doc["stats"]["errors"] == []


def test_json_keeps_unicode_literal(result: ReviewResult) -> None:
    out = render(result, "json")
    assert "résumé | notes.md" in out and "\\u00e9" not in out


def test_json_incomplete(incomplete: ReviewResult) -> None:
    stats = json.loads(render(incomplete, "json"))["stats"]
    assert stats["complete"] is False
    assert stats["changed_lines_sent"] < stats["changed_lines"]
    assert stats["errors"] and "HTTP 500" in stats["errors"][0]


def test_every_output_has_its_renderer_module() -> None:
    from importlib import import_module

    for fmt in OUTPUTS:
        assert callable(import_module(f"reviewbot.report.{fmt}").render)


@pytest.mark.parametrize("fmt", OUTPUTS)
def test_every_format_renders_empty_and_full(fmt: str, result: ReviewResult,
                                             empty: ReviewResult) -> None:
    for r in (result, empty):
        out = render(r, fmt)
        assert out.endswith("\n")


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown output format"):
        render(ReviewResult([], "", Stats()), "xml")
