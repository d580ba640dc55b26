"""`--output sarif`: a SARIF 2.1.0 log for code-scanning dashboards (GitHub, Azure DevOps, IDEs).

One run, one rule per finding category. Only new-side findings get a region: SARIF locations
point into the analysed (new) tree, where a line removed by the change does not exist. An
old-side finding is still reported, without a location, marked `properties.side = "old"`.
"""

from __future__ import annotations

import json
from importlib import metadata
from urllib.parse import quote

from reviewbot import __version__
from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.result import ReviewResult

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "reviewbot/v1"  # bump when Finding.fingerprint's recipe changes

LEVELS = {
    Severity.BLOCKER: "error",
    Severity.CRITICAL: "error",
    Severity.MAJOR: "error",
    Severity.MINOR: "warning",
    Severity.INFO: "note",
}

Json = dict[str, object]


def render(result: ReviewResult) -> str:
    return json.dumps(to_sarif(result), indent=2, ensure_ascii=False) + "\n"


def to_sarif(result: ReviewResult) -> Json:
    findings = result.findings + result.earlier
    categories = sorted({_rule_id(f) for f in findings})
    index = {c: i for i, c in enumerate(categories)}
    held = {h.fingerprint: h.reason for h in result.held}
    held.update({f.fingerprint: "still open from an earlier review" for f in result.earlier})
    hidden = result.hidden()
    run: Json = {
        "tool": {"driver": _driver(categories)},
        "invocations": [_invocation(result)],
        "results": [_result(f, index, held.get(f.fingerprint), f.fingerprint in hidden)
                    for f in findings],
        "properties": {
            "summary": result.summary,
            "model": result.model,
            "stats": result.stats.to_dict(),
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _driver(categories: list[str]) -> Json:
    driver: Json = {
        "name": "reviewbot",
        "version": __version__,
        "rules": [
            {
                "id": c,
                "name": c,
                "shortDescription": {"text": f"reviewbot: {c} findings from an LLM code review"},
            }
            for c in categories
        ],
    }
    uri = _information_uri()
    if uri:
        driver["informationUri"] = uri
    return driver


def _information_uri() -> str | None:
    """The project's home page from the installed package's metadata (pyproject [project.urls])."""
    try:
        urls: list[str] = metadata.metadata("reviewbot").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "documentation", "source", "repository"):
            return url.strip()
    return None


def _rule_id(f: Finding) -> str:
    return f.category.strip() or "general"


def _result(f: Finding, index: dict[str, int], held: str | None = None,
            hidden: bool = False) -> Json:
    rule = _rule_id(f)
    props: Json = {"severity": f.severity.label, "side": f.side.value, "title": f.title}
    if f.confidence is not None:
        props["confidence"] = f.confidence
    if held is not None:  # a forge would not post it as an inline thread
        props["held_back"] = held
    out: Json = {
        "ruleId": rule,
        "ruleIndex": index[rule],
        "level": LEVELS[f.severity],
        "message": {"text": _message(f)},
    }
    if f.side is Side.OLD:
        # The line exists only in the old file: keep where it was as data, not as a location.
        props.update({"path": f.path, "line": f.line, "end_line": f.end_line})
    elif f.path:
        out["locations"] = [_location(f)]
        if f.suggestion is not None and f.line is not None:
            out["fixes"] = [_fix(f, f.line)]
    if f.fingerprint:
        out["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    if hidden:  # below the noise floor: kept as data, never an alert
        out["suppressions"] = [{"kind": "external", "justification": held or "held back"}]
    out["properties"] = props
    return out


def _message(f: Finding) -> str:
    text = f.title if not f.body else f"{f.title}\n\n{f.body}"
    if f.side is Side.OLD:
        where = f"line {f.line}" if f.end_line in (None, f.line) else f"lines {f.line}-{f.end_line}"
        text += (f"\n\n(On {where} of the old version of {f.path}, removed by this change: "
                 "there is no location for it in the new tree.)")
    if f.suggestion is not None:
        text += f"\n\nSuggested change:\n{f.suggestion}"
    return text


def _uri(path: str) -> str:
    return quote(path, safe="/")  # a relative URI reference; spaces and non-ASCII percent-encoded


def _region(line: int, end_line: int | None) -> Json:
    region: Json = {"startLine": line}
    if end_line is not None and end_line > line:
        region["endLine"] = end_line
    return region


def _location(f: Finding) -> Json:
    physical: Json = {"artifactLocation": {"uri": _uri(f.path)}}
    if f.line is not None:
        physical["region"] = _region(f.line, f.end_line)
    return {"physicalLocation": physical}


def _fix(f: Finding, line: int) -> Json:
    # A region without columns covers whole lines minus the final newline, so the replacement
    # text carries no trailing newline either.
    return {
        "description": {"text": "Suggested change"},
        "artifactChanges": [{
            "artifactLocation": {"uri": _uri(f.path)},
            "replacements": [{
                "deletedRegion": _region(line, f.end_line),
                "insertedContent": {"text": (f.suggestion or "").removesuffix("\n")},
            }],
        }],
    }


def _invocation(result: ReviewResult) -> Json:
    stats = result.stats
    notes: list[Json] = [{"level": "error", "message": {"text": e}} for e in stats.errors]
    if stats.changed_lines_sent != stats.changed_lines:
        notes.append({"level": "error", "message": {"text": (
            f"review incomplete: only {stats.changed_lines_sent} of {stats.changed_lines} "
            "changed lines reached the model")}})
    if stats.cut_note():
        notes.append({"level": "warning", "message": {"text": stats.cut_note()}})
    notes += [
        {
            "level": "note",
            "message": {"text": f"skipped {s.path}: {s.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(s.path)}}}],
        }
        for s in stats.files_skipped
    ]
    out: Json = {"executionSuccessful": result.complete}
    if notes:
        out["toolExecutionNotifications"] = notes
    return out
