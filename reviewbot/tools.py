"""The `report_findings` tool: its schema for one chunk, and turning its calls into Findings.

The schema is valid-by-construction: a finding names a `row` of the rendered diff, and `row`
only admits the rows this chunk shows. Every row is a commentable position (added → new side,
removed → old side, context → new side), so guided decoding cannot produce an anchor outside
the chunk, whatever the model. Everything but the row ranges is the same for every chunk and
comes first, so chunks share the longest possible prefix for vLLM's prefix cache.

Calls are still validated: bad JSON, unknown tools, missing fields and rows outside the chunk
are dropped or re-anchored to the nearest shown row of the same file, and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reviewbot.anchoring import at_row
from reviewbot.chunking import Chunk, Row
from reviewbot.diff import Side
from reviewbot.findings import SEVERITIES, Finding, Severity
from reviewbot.modeltext import clean, one_line, suggestion_ok

TOOL_NAME = "report_findings"
# the schema's own limits, enforced again after parsing (a server may not constrain decoding)
MAX_CHARS = {"title": 120, "body": 1200, "suggestion": 2000, "summary": 400}
MAX_ARGUMENTS = 1_000_000  # characters of one call's JSON; more is not an answer to this tool
CATEGORIES = ("bug", "security", "performance", "error-handling", "concurrency", "maintainability")

_DESCRIPTION = (
    "Report the problems found in this part of the change. Call it exactly once; "
    "pass an empty list when the change looks correct."
)


def _ranges(numbers: Iterable[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def row_schema(rows: Iterable[int]) -> dict[str, Any]:
    """An integer that is one of these rows (a few ranges: a chunk holds runs of consecutive rows)."""
    spans = [{"minimum": lo, "maximum": hi} for lo, hi in _ranges(rows)]
    if len(spans) == 1:
        return {"type": "integer", **spans[0]}
    return {"type": "integer", "anyOf": spans}


def tool_schema(chunk: Chunk, max_findings: int) -> dict[str, Any]:
    finding = {
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "title": {"type": "string", "maxLength": MAX_CHARS["title"]},
            "body": {"type": "string", "maxLength": MAX_CHARS["body"]},
            "suggestion": {"type": "string", "maxLength": MAX_CHARS["suggestion"]},
            "end_row": {"type": "integer"},
            "row": row_schema(chunk.rows()),  # last: the only part that differs between chunks
        },
        "required": ["severity", "category", "title", "body", "row"],
        "additionalProperties": False,
    }
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": _DESCRIPTION,
            # vLLM >= 0.30 pins the arguments to this schema in its tool-call grammar only for
            # strict tools; older servers use the schema for guided decoding either way
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "maxLength": MAX_CHARS["summary"]},
                    "findings": {"type": "array", "maxItems": max_findings, "items": finding},
                },
                "required": ["summary", "findings"],
                "additionalProperties": False,
            },
        },
    }


@dataclass
class Parsed:
    findings: list[Finding] = field(default_factory=list)
    summary: str = ""
    invalid: int = 0  # calls or items that were dropped
    reanchored: int = 0
    usable: bool = False  # one call of this tool with a findings list: the chunk was reviewed
    problem: str = "no call of report_findings"  # why not, when not usable


def parse_calls(calls: list[tuple[str, str]], chunk: Chunk, max_findings: int) -> Parsed:
    """(name, arguments JSON) pairs → validated Findings anchored inside this chunk.

    Beyond `max_findings` per answer the rest are dropped and counted.
    """
    out = Parsed()
    rows = chunk.rows()
    for name, arguments in calls:
        if name != TOOL_NAME:
            out.invalid += 1
            out.problem = f"a call of an unknown tool {one_line(clean(name, 60))!r}"
            continue
        if not isinstance(arguments, str) or len(arguments) > MAX_ARGUMENTS:
            out.invalid += 1
            out.problem = "arguments missing or too long"
            continue
        try:
            args = json.loads(arguments, strict=False)  # raw control chars in strings are fine
        except (json.JSONDecodeError, RecursionError):
            out.invalid += 1
            out.problem = "arguments that are not JSON (or nested too deep)"
            continue
        if not isinstance(args, dict) or not isinstance(args.get("findings"), list):
            out.invalid += 1
            out.problem = "arguments without a findings list"
            continue
        out.usable = True
        summary = one_line(clean(args.get("summary"), MAX_CHARS["summary"]))
        if summary:
            out.summary = summary
        items = args["findings"]
        out.invalid += max(0, len(items) - max_findings)
        for item in items[:max_findings]:
            finding, moved = _finding(item, rows)
            if finding is None:
                out.invalid += 1
            else:
                out.findings.append(finding)
                out.reanchored += moved
    return out


def _finding(item: Any, rows: dict[int, Row]) -> tuple[Finding | None, bool]:
    if not isinstance(item, dict):
        return None, False
    title = one_line(clean(item.get("title"), MAX_CHARS["title"]))
    row = item.get("row")
    if not title or not isinstance(row, int) or isinstance(row, bool) or not rows:
        return None, False
    try:
        severity = Severity.parse(str(item.get("severity", "minor")))
    except KeyError:
        return None, False
    anchor = at_row(rows, row, item.get("end_row"))
    at = anchor.row
    suggestion: str | None = clean(item.get("suggestion"), MAX_CHARS["suggestion"])
    if not suggestion or not suggestion.strip() or at.side is not Side.NEW \
            or not suggestion_ok(suggestion):
        suggestion = None
    category = item.get("category")
    return Finding(
        path=at.file.path,
        line=at.number,
        side=at.side,
        end_line=anchor.end_line,
        severity=severity,
        category=category if category in CATEGORIES else "bug",
        title=title,
        body=clean(item.get("body"), MAX_CHARS["body"]).strip(),
        suggestion=suggestion,
    ), anchor.moved
