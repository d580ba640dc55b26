"""The two tools, `report_findings` and `verify_findings`: their schemas, generated from one typed
definition each, and turning their calls into Findings and verdicts.

Valid by construction: a finding names a `row` of the rendered diff, and `row` only admits the
rows this chunk shows. Every row is a commentable position (added → new side, removed → old
side, context → new side), so guided decoding cannot produce an anchor outside the chunk.

Prefix cache: chat templates render the tools into the system prompt, so both passes send the
same two tools (the forced `tool_choice` picks one), and everything that differs between chunks
(the admitted rows, the findings cap) sits in `$defs` at the very end of the tool JSON.
Think before committing: a finding's anchor, title and explanation come before its category,
severity and confidence; a verdict's reason before its decision.

Calls are still validated: bad JSON, unknown tools, missing fields and rows outside the chunk
are dropped or re-anchored to the nearest shown row of the same file, and counted; the schema's
limits are enforced again, since a server may not constrain decoding.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from reviewbot.anchoring import at_row
from reviewbot.diff import Side
from reviewbot.engine.chunking import Chunk, Row
from reviewbot.findings import CATEGORIES, SEVERITIES, Finding, Severity, capped_severity
from reviewbot.modeltext import clean, one_line, suggestion_ok

TOOL_NAME = "report_findings"
VERIFY_TOOL = "verify_findings"
MAX_ARGUMENTS = 1_000_000  # characters of one call's JSON; more is not an answer to this tool

# room for every real issue: at least one finding per LINES_PER_FINDING changed lines
MIN_FINDINGS = 8
LINES_PER_FINDING = 25
TOKENS_PER_FINDING = 200  # output reserved per finding beyond the first MIN_FINDINGS
TOKENS_PER_VERDICT = 96


@dataclass(frozen=True)
class Prop:
    """One property of a tool's arguments: its JSON-schema type and the limits parsing enforces."""

    name: str
    kind: Literal["string", "integer", "number", "boolean", "array"]
    required: bool = True
    max_chars: int | None = None
    enum: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None
    ref: str | None = None  # the schema is a per-request definition under `$defs`

    def schema(self) -> dict[str, Any]:
        if self.ref is not None:
            return {"$ref": f"#/$defs/{self.ref}"}
        out: dict[str, Any] = {"type": self.kind}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        if self.max_chars is not None:
            out["maxLength"] = self.max_chars
        if self.bounds is not None:
            out["minimum"], out["maximum"] = self.bounds
        return out


def _object(props: Iterable[Prop]) -> dict[str, Any]:
    props = tuple(props)
    return {
        "type": "object",
        "properties": {p.name: p.schema() for p in props},
        "required": [p.name for p in props if p.required],
        "additionalProperties": False,
    }


FINDING = (
    Prop("row", "integer", ref="row"),
    Prop("end_row", "integer", required=False, ref="row"),
    Prop("title", "string", max_chars=120),
    Prop("body", "string", max_chars=1200),  # the evidence: what goes wrong, when, why
    Prop("suggestion", "string", required=False, max_chars=2000),
    Prop("category", "string", enum=CATEGORIES),
    Prop("severity", "string", enum=SEVERITIES),
    Prop("confidence", "number", bounds=(0, 1)),
)
REPORT = (
    Prop("summary", "string", max_chars=400),
    Prop("findings", "array", ref="findings"),
)
VERDICT = (
    Prop("id", "integer", ref="candidate"),
    Prop("reason", "string", max_chars=200),
    Prop("keep", "boolean"),
    Prop("severity", "string", enum=SEVERITIES),
    Prop("confidence", "number", bounds=(0, 1)),
)
VERIFY = (Prop("verdicts", "array", ref="verdicts"),)
JUDGE = (Prop("reason", "string", max_chars=300), Prop("same", "boolean"))
LIMITS = {p.name: p.max_chars for p in FINDING + REPORT + VERDICT if p.max_chars}

_REPORT_DESCRIPTION = (
    "Report the problems found in this part of the change. Call it exactly once; "
    "pass an empty list when the change looks correct."
)
_VERIFY_DESCRIPTION = (
    "Give a verdict on every candidate finding, by its id: keep it only if the diff shows the "
    "problem is real and matters."
)


def findings_cap(changed_lines: int, bound: int) -> int:
    """How many findings one chunk may report: one per LINES_PER_FINDING changed lines, at
    least MIN_FINDINGS, at most `bound` (max_findings_per_chunk)."""
    return min(bound, max(MIN_FINDINGS, math.ceil(changed_lines / LINES_PER_FINDING)))


def extra_output(changed_lines: int, bound: int) -> int:
    """Output tokens a chunk needs beyond `max_output_tokens` (which covers MIN_FINDINGS)."""
    return TOKENS_PER_FINDING * (findings_cap(changed_lines, bound) - min(bound, MIN_FINDINGS))


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


def _tool(name: str, description: str, props: tuple[Prop, ...],
          defs: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            # vLLM >= 0.30 pins the arguments to this schema in its tool-call grammar only for
            # strict tools; older servers use the schema for guided decoding either way
            "strict": True,
            "parameters": {**_object(props), "$defs": defs},
        },
    }


def report_tool(chunk: Chunk, cap: int, categories: tuple[str, ...] = CATEGORIES) -> dict[str, Any]:
    finding = (replace(p, enum=categories) if p.name == "category" else p for p in FINDING)
    return _tool(TOOL_NAME, _REPORT_DESCRIPTION, REPORT, {
        "finding": _object(finding),
        # last: the only part that differs between chunks
        "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}, "maxItems": cap},
        "row": row_schema(chunk.rows()),
    })


def verify_tool(bound: int) -> dict[str, Any]:
    """The same for every chunk: candidate ids are bounded by max_findings_per_chunk here, and
    checked against the real candidates when parsed (a per-request schema would end the shared
    prefix at the system prompt)."""
    return _tool(VERIFY_TOOL, _VERIFY_DESCRIPTION, VERIFY, {
        "verdict": _object(VERDICT),
        "verdicts": {"type": "array", "items": {"$ref": "#/$defs/verdict"}, "maxItems": bound},
        "candidate": {"type": "integer", "minimum": 1, "maximum": bound},
    })


JUDGE_TOOL = "same_problem"


def judge_tool() -> dict[str, Any]:
    """`reviewbot eval --judge`: do a finding and a golden comment describe the same problem?"""
    return _tool(JUDGE_TOOL, "Say whether the two review comments describe the same problem.",
                 JUDGE, {})


def parse_judgement(calls: list[tuple[str, str]]) -> bool | None:
    """The judge's `same`, or None when the answer is not one call of the judge tool."""
    for name, arguments in calls:
        try:
            args = json.loads(arguments, strict=False) if name == JUDGE_TOOL else None
        except (json.JSONDecodeError, RecursionError):
            args = None
        if isinstance(args, dict) and isinstance(args.get("same"), bool):
            return bool(args["same"])
    return None


# --- parsing -------------------------------------------------------------------------------

@dataclass
class Parsed:
    findings: list[Finding] = field(default_factory=list)
    summary: str = ""
    invalid: int = 0  # calls or items that were dropped
    reanchored: int = 0
    usable: bool = False  # one call of this tool with a findings list: the chunk was reviewed
    problem: str = "no call of report_findings"  # why not, when not usable


def _arguments(calls: list[tuple[str, str]], tool: str, key: str,
               out: Parsed | Verdicts) -> list[tuple[dict[str, Any], list[Any]]]:
    """The argument objects of the calls of `tool` that hold a `key` list; the rest counted."""
    good = []
    for name, arguments in calls:
        if name != tool:
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
        if not isinstance(args, dict) or not isinstance(args.get(key), list):
            out.invalid += 1
            out.problem = f"arguments without a {key} list"
            continue
        good.append((args, args[key]))
    return good


def parse_calls(calls: list[tuple[str, str]], chunk: Chunk, max_findings: int,
                categories: tuple[str, ...] = CATEGORIES) -> Parsed:
    """(name, arguments JSON) pairs → validated Findings anchored inside this chunk.

    Beyond `max_findings` per answer the rest are dropped and counted; a category outside
    `categories` is dropped; maintainability is at most minor.
    """
    out = Parsed()
    rows = chunk.rows()
    for args, items in _arguments(calls, TOOL_NAME, "findings", out):
        out.usable = True
        summary = one_line(clean(args.get("summary"), LIMITS["summary"]))
        if summary:
            out.summary = summary
        out.invalid += max(0, len(items) - max_findings)
        for item in items[:max_findings]:
            finding, moved = _finding(item, rows, categories)
            if finding is None:
                out.invalid += 1
            else:
                out.findings.append(finding)
                out.reanchored += moved
    return out


def _confidence(value: Any, default: float | None) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return min(1.0, max(0.0, float(value)))
    return default


def _finding(item: Any, rows: dict[int, Row],
             categories: tuple[str, ...]) -> tuple[Finding | None, bool]:
    if not isinstance(item, dict):
        return None, False
    title = one_line(clean(item.get("title"), LIMITS["title"]))
    row = item.get("row")
    if not title or not isinstance(row, int) or isinstance(row, bool) or not rows:
        return None, False
    try:
        severity = Severity.parse(str(item.get("severity", "minor")))
    except KeyError:
        return None, False
    category = item.get("category", "bug")
    if category not in categories:
        return None, False
    severity = capped_severity(category, severity)
    anchor = at_row(rows, row, item.get("end_row"))
    at = anchor.row
    suggestion: str | None = clean(item.get("suggestion"), LIMITS["suggestion"])
    if not suggestion or not suggestion.strip() or at.side is not Side.NEW \
            or not suggestion_ok(suggestion):
        suggestion = None
    return Finding(
        path=at.file.path,
        line=at.number,
        side=at.side,
        end_line=anchor.end_line,
        severity=severity,
        category=category,
        title=title,
        body=clean(item.get("body"), LIMITS["body"]).strip(),
        suggestion=suggestion,
        confidence=_confidence(item.get("confidence"), None),
    ), anchor.moved


@dataclass(frozen=True)
class Verdict:
    keep: bool
    severity: Severity
    confidence: float
    reason: str


@dataclass
class Verdicts:
    by_id: dict[int, Verdict] = field(default_factory=dict)
    invalid: int = 0
    usable: bool = False
    problem: str = "no call of verify_findings"


def parse_verdicts(calls: list[tuple[str, str]], ids: set[int]) -> Verdicts:
    """Verdicts on the candidates `ids`; a verdict on any other id, or a second one on the same
    id, is dropped and counted."""
    out = Verdicts()
    for _, items in _arguments(calls, VERIFY_TOOL, "verdicts", out):
        out.usable = True
        for item in items[:len(ids) + 1]:
            verdict = _verdict(item)
            cid = item.get("id") if isinstance(item, dict) else None
            if verdict is None or not isinstance(cid, int) or cid not in ids or cid in out.by_id:
                out.invalid += 1
            else:
                out.by_id[cid] = verdict
        out.invalid += max(0, len(items) - len(ids) - 1)
    return out


def _verdict(item: Any) -> Verdict | None:
    if not isinstance(item, dict) or not isinstance(item.get("keep"), bool):
        return None
    try:
        severity = Severity.parse(str(item.get("severity")))
    except KeyError:
        return None
    confidence = _confidence(item.get("confidence"), None)
    if confidence is None:
        return None
    return Verdict(item["keep"], severity, confidence,
                   one_line(clean(item.get("reason"), LIMITS["reason"])))
