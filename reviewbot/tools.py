"""The `report_findings` tool: its schema for one chunk, and turning its calls into Findings.

The schema is valid-by-construction: `location` only admits the (path, side, line) ranges that
the chunk shows, so guided decoding cannot produce an anchor outside the chunk. Everything that
is the same for every chunk (name, description, finding fields) comes first and `location`, the
only part that changes, comes last, so the rendered tool text shares the longest possible prefix
across chunks and vLLM's prefix cache reuses it.

Calls are still validated: bad JSON, unknown tools, missing fields and out-of-chunk anchors are
dropped or re-anchored to the nearest shown line of the same file, and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reviewbot.chunking import Chunk
from reviewbot.diff import Side
from reviewbot.findings import SEVERITIES, Finding, Severity

TOOL_NAME = "report_findings"
CATEGORIES = ("bug", "security", "performance", "error-handling", "concurrency", "maintainability")

_DESCRIPTION = (
    "Report the problems found in this part of the change. Call it exactly once; "
    "pass an empty list when the change looks correct."
)


def _ranges(lines: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(lines):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def anchor_ranges(chunk: Chunk) -> list[tuple[str, Side, list[tuple[int, int]]]]:
    """(path, side, runs of shown lines) for every file and side the chunk shows."""
    out = []
    for path, positions in chunk.positions().items():
        for side in Side:
            runs = _ranges({n for s, n in positions if s is side})
            if runs:
                out.append((path, side, runs))
    return out


def line_range(lo: int, hi: int) -> dict[str, int]:
    return {"minimum": lo, "maximum": hi}


def branch(path: str, side: Side, runs: list[tuple[int, int]]) -> dict[str, Any]:
    """The schema of the anchors in one file and side: this path, this side, a shown line."""
    line: dict[str, Any] = {"type": "integer"}
    if len(runs) == 1:
        line.update(line_range(*runs[0]))
    else:
        line["anyOf"] = [line_range(lo, hi) for lo, hi in runs]
    return {
        "type": "object",
        "properties": {
            "path": {"type": "string", "enum": [path]},
            "side": {"type": "string", "enum": [side.value]},
            "line": line,
            "end_line": {"type": "integer"},
        },
        "required": ["path", "side", "line"],
        "additionalProperties": False,
    }


def tool_schema(chunk: Chunk, max_findings: int) -> dict[str, Any]:
    branches = [branch(*span) for span in anchor_ranges(chunk)]
    finding = {
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "title": {"type": "string", "maxLength": 120},
            "body": {"type": "string", "maxLength": 1200},
            "suggestion": {"type": "string", "maxLength": 2000},
            "location": {"anyOf": branches},  # last: the only part that differs between chunks
        },
        "required": ["severity", "category", "title", "body", "location"],
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
                    "summary": {"type": "string", "maxLength": 400},
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


def parse_calls(calls: list[tuple[str, str]], chunk: Chunk) -> Parsed:
    """(name, arguments JSON) pairs → validated Findings anchored inside this chunk."""
    out = Parsed()
    shown = chunk.positions()
    for name, arguments in calls:
        if name != TOOL_NAME:
            out.invalid += 1
            continue
        try:
            args = json.loads(arguments, strict=False)  # raw control chars in strings are fine
        except (json.JSONDecodeError, TypeError):
            out.invalid += 1
            continue
        if not isinstance(args, dict) or not isinstance(args.get("findings", []), list):
            out.invalid += 1
            continue
        if isinstance(args.get("summary"), str) and args["summary"].strip():
            out.summary = " ".join(args["summary"].split())
        for item in args.get("findings", []):
            finding, moved = _finding(item, shown)
            if finding is None:
                out.invalid += 1
            else:
                out.findings.append(finding)
                out.reanchored += moved
    return out


def _finding(item: Any, shown: dict[str, set[tuple[Side, int]]]) -> tuple[Finding | None, bool]:
    if not isinstance(item, dict):
        return None, False
    loc = item.get("location", item)  # tolerate a flat item from an unconstrained model
    title, body = item.get("title"), item.get("body")
    if not isinstance(loc, dict) or not isinstance(title, str) or not title.strip():
        return None, False
    path, line = loc.get("path"), loc.get("line")
    if not isinstance(path, str) or path not in shown or not isinstance(line, int) or isinstance(line, bool):
        return None, False
    try:
        severity = Severity.parse(str(item.get("severity", "minor")))
        side = Side(loc.get("side", "new"))
    except (KeyError, ValueError):
        return None, False
    anchored_side, anchored = _nearest(shown[path], side, line)
    moved = (anchored_side, anchored) != (side, line)
    end = loc.get("end_line")
    if not isinstance(end, int) or moved or end <= anchored or (side, end) not in shown[path]:
        end = None
    suggestion = item.get("suggestion")
    if not isinstance(suggestion, str) or not suggestion.strip() or anchored_side is not Side.NEW:
        suggestion = None
    category = item.get("category")
    return Finding(
        path=path,
        line=anchored,
        side=anchored_side,
        end_line=end,
        severity=severity,
        category=category if category in CATEGORIES else "bug",
        title=" ".join(title.split())[:200],
        body=(body if isinstance(body, str) else "").strip(),
        suggestion=suggestion,
    ), moved


def _nearest(positions: set[tuple[Side, int]], side: Side, line: int) -> tuple[Side, int]:
    """The shown position closest to (side, line), preferring the same side."""
    if (side, line) in positions:
        return side, line
    same = [n for s, n in positions if s is side]
    if same:
        return side, min(same, key=lambda n: (abs(n - line), n))
    other = min(positions, key=lambda p: (abs(p[1] - line), p[1]))
    return other
