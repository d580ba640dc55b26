"""`--output codequality`: a GitLab Code Quality report (a JSON array of issues).

GitLab shows these in the merge request widget and, for lines in the diff, beside the code.
Its location is a new-file path and line, so findings on lines the change removed are pinned to
line 1 of the file with the old position stated.
"""

from __future__ import annotations

import hashlib
import json

from reviewbot.diff import Side
from reviewbot.findings import Finding
from reviewbot.result import ReviewResult

INCOMPLETE_CHECK = "reviewbot/incomplete-review"
CUT_CHECK = "reviewbot/lines-cut-short"


def render(result: ReviewResult) -> str:
    return json.dumps(to_codequality(result), indent=2, ensure_ascii=False) + "\n"


def to_codequality(result: ReviewResult) -> list[dict[str, object]]:
    """What the verdict covers (`ReviewResult.gating`): nothing held back below the noise floor,
    and the open findings of earlier reviews, so the MR widget keeps a finding while its
    thread is open."""
    earlier = {f.fingerprint for f in result.earlier}
    issues = [_issue(f, f.fingerprint in earlier) for f in result.gating()]
    if not result.complete:
        # The format has no notion of an incomplete run; an empty report would read as "clean".
        issues.append(_incomplete(result))
    elif result.stats.cut_note():  # complete, but not every character was seen
        issues.append({"description": f"reviewbot: {result.stats.cut_note()}",
                       "check_name": CUT_CHECK, "fingerprint": _hash(CUT_CHECK),
                       "severity": "info", "location": {"path": ".", "lines": {"begin": 1, "end": 1}}})
    _dedupe_fingerprints(issues)
    return issues


def _issue(f: Finding, earlier: bool = False) -> dict[str, object]:
    description = f.title + (" (still open from an earlier review)" if earlier else "")
    begin, end = 1, 1
    if f.side is Side.OLD and f.line is not None:
        description += f" (on removed line {f.line} of the old file)"
    elif f.line is None:
        description += " (not on a changed line)"
    else:
        begin, end = f.line, max(f.end_line or f.line, f.line)
    return {
        "description": description,
        "check_name": f"reviewbot/{f.category.strip() or 'general'}",
        "fingerprint": f.fingerprint or _hash(f.path, f.title, str(f.line)),
        "severity": f.severity.label,  # our scale is GitLab's: info|minor|major|critical|blocker
        "location": {"path": f.path, "lines": {"begin": begin, "end": end}},
        "content": {"body": _content(f)},
    }


def _content(f: Finding) -> str:
    if f.suggestion is None:
        return f.body
    return f"{f.body}\n\nSuggested change:\n{f.suggestion}"


def _incomplete(result: ReviewResult) -> dict[str, object]:
    stats = result.stats
    why = "; ".join(stats.errors) or "not every changed line reached the model"
    return {
        "description": (f"reviewbot: review INCOMPLETE ({stats.changed_lines_sent} of "
                        f"{stats.changed_lines} changed lines reviewed): {why}"),
        "check_name": INCOMPLETE_CHECK,
        "fingerprint": _hash(INCOMPLETE_CHECK, *stats.errors),
        "severity": "major",
        # No file is at fault; "." names the repository itself so GitLab can still list it.
        "location": {"path": ".", "lines": {"begin": 1, "end": 1}},
    }


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:32]


def _dedupe_fingerprints(issues: list[dict[str, object]]) -> None:
    """GitLab keys issues by fingerprint: two equal ones would collapse into one."""
    seen: set[object] = set()
    for issue in issues:
        fp = issue["fingerprint"]
        n = 1
        while fp in seen:
            n += 1
            fp = f"{issue['fingerprint']}-{n}"
        issue["fingerprint"] = fp
        seen.add(fp)
