"""The tools, `report_findings` and eval's `same_problem`, and the verification's answer
`verify_findings`: their schemas, generated from one typed definition each (their answers are
read in reviewbot.engine.answers).

Valid by construction: a finding names a `row` of the rendered diff, and `row` only admits the
rows this chunk shows. Every row is a commentable position (added → new side, removed → old
side, context → new side), so guided decoding cannot produce an anchor outside the chunk.

A verdict per candidate, also by construction: the verification's answer is an object with one
required key per candidate id, so an empty or partial list cannot be decoded.

Prefix cache: chat templates render the tools into the system prompt, so the verification sends
the finding pass's tools untouched and asks for its answer as `response_format` (with
`tool_choice` "none"): its schema, which names this chunk's candidates, never enters the prompt.
Everything that differs between chunks (the admitted rows, the findings cap) sits in `$defs` at
the very end of the tool JSON.

Think before committing: a finding's anchor, title and explanation come before its category,
severity and confidence; a verdict's reason before its decision.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from reviewbot.engine.chunking import Chunk
from reviewbot.findings import CATEGORIES, SEVERITIES

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
    kind: Literal["string", "integer", "number", "boolean", "array", "object"]
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
# the findings first: a small model that wrote its summary first described the change there
# ("adds a command to create a tar archive") instead of the problem (shell=True injection)
REPORT = (
    Prop("findings", "array", ref="findings"),
    Prop("summary", "string", max_chars=400),
)
# findings_format reason: the model reviews in this string first, then lists what it found (a
# model that must open with the list commits to "none" before it has thought)
ANALYSIS = Prop("analysis", "string", max_chars=4000)
VERDICT = (
    Prop("reason", "string", max_chars=200),
    Prop("keep", "boolean"),
    Prop("severity", "string", enum=SEVERITIES),
    Prop("confidence", "number", bounds=(0, 1)),
)
JUDGE = (Prop("reason", "string", max_chars=300), Prop("same", "boolean"))


class ReplyVerdict(StrEnum):
    """What the model's answer in a thread does with the bot's finding."""

    KEEP = "keep"
    WITHDRAW = "withdraw"  # the member's rebuttal holds: resolved, and remembered
    FIXED = "fixed"  # the current code no longer has the problem: resolved


VERDICTS = tuple(v.value for v in ReplyVerdict)
REPLY = (Prop("body", "string", max_chars=1500), Prop("verdict", "string", enum=VERDICTS),
         Prop("learning", "string", required=False, max_chars=300))
LIMITS = {p.name: p.max_chars for p in FINDING + REPORT + VERDICT if p.max_chars}
REPLY_CHARS = 1500

_REPORT_DESCRIPTION = (
    "Report the problems found in this part of the change. Call it exactly once; "
    "pass an empty list when the change looks correct."
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


def report_tool(chunk: Chunk, cap: int, categories: tuple[str, ...] = CATEGORIES,
                analysis: bool = False) -> dict[str, Any]:
    finding = (replace(p, enum=categories) if p.name == "category" else p for p in FINDING)
    report = (ANALYSIS, *REPORT) if analysis else REPORT
    return _tool(TOOL_NAME, _REPORT_DESCRIPTION, report, {
        "finding": _object(finding),
        # last: the only part that differs between chunks
        "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}, "maxItems": cap},
        "row": row_schema(chunk.rows()),
    })


def requiring(tool_list: list[dict[str, Any]], name: str, items: str,
              least: int) -> list[dict[str, Any]]:
    """`tool_list` with tool `name`'s array `items` holding `least` entries at least. A small
    model fills a list only when it must: Qwen2.5-Coder-1.5B answered `[]` again when asked
    plainly for the problems its summary named."""
    out = []
    for tool in tool_list:
        if tool["function"]["name"] == name:
            parameters = tool["function"]["parameters"]
            defs = {**parameters["$defs"],
                    items: {**parameters["$defs"][items], "minItems": least}}
            tool = {**tool, "function": {**tool["function"],
                                         "parameters": {**parameters, "$defs": defs}}}
        out.append(tool)
    return out


def keyed(keys: Iterable[str], item: str) -> dict[str, Any]:
    """One `item` (a `$defs` name) under each key, each exactly once: an object, not a list,
    so guided decoding can neither skip a key nor repeat one."""
    keys = list(keys)
    return {"type": "object", "properties": {k: {"$ref": f"#/$defs/{item}"} for k in keys},
            "required": keys, "additionalProperties": False}


def verify_schema(candidates: int) -> dict[str, Any]:
    """The verification's answer for candidates 1..`candidates`: {"verdicts": {"1": verdict,
    ...}}, sent as `response_format`, never as a tool (see the module's docstring)."""
    return {**_object((Prop("verdicts", "object", ref="verdicts"),)), "$defs": {
        "verdict": _object(VERDICT),
        "verdicts": keyed((str(i) for i in range(1, candidates + 1)), "verdict")}}


JUDGE_TOOL = "same_problem"


def judge_tool() -> dict[str, Any]:
    """`reviewbot eval --judge`: do a finding and a golden comment describe the same problem?"""
    return _tool(JUDGE_TOOL, "Say whether the two review comments describe the same problem.",
                 JUDGE, {})


REPLY_TOOL = "reply"


def reply_tool() -> dict[str, Any]:
    """An answer in a thread: the text, then what becomes of the finding the thread is about."""
    return _tool(REPLY_TOOL, "Answer in the thread, then say whether the finding stays (keep), "
                 "was wrong (withdraw) or is fixed in the current code (fixed).", REPLY, {})


ANSWER_TOOL = "answer"
ANSWER = (Prop("body", "string", max_chars=1500),)


def answer_tool() -> dict[str, Any]:
    """An answer to a question about the change, asked outside the bot's threads."""
    return _tool(ANSWER_TOOL, "Answer the question about this change.", ANSWER, {})
