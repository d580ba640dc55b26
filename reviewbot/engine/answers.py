"""Turning the tools' calls into Findings, verdicts and judgements.

Calls are validated although the schema constrained them: bad JSON, unknown tools, missing
fields and rows outside the chunk are dropped or re-anchored to the nearest shown row of the
same file, and counted; the schema's limits are enforced again, since a server may not
constrain decoding.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from reviewbot.anchoring import Row, at_row
from reviewbot.diff import Side
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.tools import (
    ANSWER_TOOL,
    JUDGE_TOOL,
    LIMITS,
    MAX_ARGUMENTS,
    REPLY_CHARS,
    REPLY_TOOL,
    TOOL_NAME,
    VERDICTS,
    VERIFY_TOOL,
    ReplyVerdict,
)
from reviewbot.findings import CATEGORIES, Finding, Severity, capped_severity
from reviewbot.modeltext import clean, one_line, suggestion_ok


def parse_judgement(calls: list[tuple[str, str]]) -> bool | None:
    """The judge's `same`, or None when the answer is not one call of the judge tool."""
    for name, arguments in calls:
        args = _json_object(arguments) if name == JUDGE_TOOL else None
        if args is not None and isinstance(args.get("same"), bool):
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
               out: Parsed) -> list[tuple[dict[str, Any], list[Any]]]:
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


def _fits(span: int, suggestion: str) -> bool:
    """A replacement far shorter than the lines it replaces would delete code the model never
    meant to touch (one line offered for a 56-line range): such a suggestion is dropped."""
    return span <= 2 * len(suggestion.splitlines()) + 3


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
    anchor = at_row(rows, row, item.get("end_row"))
    at = anchor.row
    severity = capped_severity(category, severity, at.file.path,
                               f"{title} {item.get('body') or ''}")
    # one character past the limit: a suggestion cut short is broken code, dropped whole
    suggestion: str | None = clean(item.get("suggestion"), LIMITS["suggestion"] + 1)
    if not suggestion or not suggestion.strip() or at.side is not Side.NEW \
            or len(suggestion) > LIMITS["suggestion"] \
            or not suggestion_ok(suggestion) \
            or not _fits((anchor.end_line or at.number) - at.number + 1, suggestion):
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
    problem: str = "no verify_findings answer"


def parse_verdicts(calls: list[tuple[str, str]], ids: set[int]) -> Verdicts:
    """Verdicts on the candidates `ids`, keyed by id; a verdict under any other key is dropped
    and counted, and a candidate without one is left out (kept by the caller)."""
    out = Verdicts()
    for name, arguments in calls[:1]:
        args = _json_object(arguments) if name == VERIFY_TOOL else None
        items = args.get("verdicts") if args is not None else None
        if not isinstance(items, dict):
            out.invalid += 1
            out.problem = "an answer without a verdicts object"
            continue
        out.usable = True
        for key, item in list(items.items())[:len(ids) + 1]:
            verdict = _verdict(item)
            cid = int(key) if key.isascii() and key.isdigit() and len(key) < 6 else None
            if verdict is None or cid not in ids:
                out.invalid += 1
            else:
                out.by_id[cid] = verdict
        out.invalid += max(0, len(items) - len(ids) - 1)
    if ids and not out.by_id and out.usable:  # a server that did not guide the answer
        out.usable, out.problem = False, "no verdict on any of the candidates"
    return out


def _json_object(arguments: str) -> dict[str, Any] | None:
    """A call's arguments as an object; None for anything else (too long, not JSON, nested too
    deep, not an object). Raw control characters inside strings are accepted."""
    if not isinstance(arguments, str) or len(arguments) > MAX_ARGUMENTS:
        return None
    try:
        args = json.loads(arguments, strict=False)
    except (json.JSONDecodeError, RecursionError):
        return None
    return args if isinstance(args, dict) else None


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


@dataclass(frozen=True)
class ThreadReply:
    body: str  # cleaned model text: still to be escaped for its sink
    verdict: ReplyVerdict
    learning: str = ""  # with withdraw: what not to flag again, in one sentence


def parse_reply(calls: list[tuple[str, str]]) -> ThreadReply | None:
    """The first valid call of the reply tool; None when there is none."""
    for name, arguments in calls:
        args = _json_object(arguments) if name == REPLY_TOOL else None
        if args is None or args.get("verdict") not in VERDICTS:
            continue
        body = clean(args.get("body"), REPLY_CHARS)
        if body.strip():  # a blank answer would post an empty comment
            return ThreadReply(body, ReplyVerdict(args["verdict"]),
                               clean(args.get("learning"), 300))
    return None


def parse_answer(calls: list[tuple[str, str]]) -> str | None:
    """The body of the first valid call of the answer tool (cleaned model text); None when
    there is none."""
    for name, arguments in calls:
        args = _json_object(arguments) if name == ANSWER_TOOL else None
        body = clean(args.get("body"), REPLY_CHARS) if args is not None else ""
        if body.strip():
            return body
    return None
