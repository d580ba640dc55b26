"""Findings as markdown: the one renderer behind the forges' inline comments, the summary note
and the markdown report.

Every piece of model or diff text goes through a `modeltext` sink here, chosen for where it
lands (a heading, a table cell, prose, a code block); only a suggestion is verbatim code, and
tools.py has already dropped any suggestion that could act.
"""

from __future__ import annotations

import html
import re

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.modeltext import code, fence, fenced, inline, no_actions, one_line, prose
from reviewbot.result import IssueCheck, IssueVerdict, ScannerDismissal
from reviewbot.withheld import Dropped

ICONS = {
    Severity.BLOCKER: "⛔",
    Severity.CRITICAL: "🔴",
    Severity.MAJOR: "🟠",
    Severity.MINOR: "🟡",
    Severity.INFO: "🔵",
}


def lines(f: Finding) -> str:
    """`12`, `12–14`, `12 (old)`, or `file` for a finding without a line."""
    if f.line is None:
        return "file"
    span = str(f.line) if f.end_line in (None, f.line) else f"{f.line}–{f.end_line}"
    return span if f.side is Side.NEW else f"{span} (old)"


def heading(f: Finding) -> str:
    return f"**{f.severity.label}** ({inline(f.category)}): {inline(f.title)}"


def suggestion_block(text: str, info: str = "suggestion") -> str:
    """A suggestion block; `info` is "suggestion" (GitHub) or "suggestion:-0+N" (GitLab)."""
    bar = fence(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{bar}{info}\n{body}{bar}"


def comment(f: Finding, suggestion: str = "", marker: str = "") -> str:
    """One inline comment: heading, explanation, the forge's suggestion block, the hidden marker
    (last, where the marker parser looks for it)."""
    parts = [heading(f)]
    if f.body.strip():
        parts.append(prose(f.body.strip()))
    parts += [p for p in (suggestion, marker) if p]
    return "\n\n".join(parts)


def list_item(f: Finding) -> list[str]:
    """A compact bullet for the summary note: where, severity, title, a one-line explanation."""
    where = code(f.path) + (f" line {lines(f)}" if f.line is not None else "")
    out = [f"- **{f.severity.label}** {where}: {inline(f.title)}"]
    if f.body.strip():
        out.append("  " + inline(f.body[:2000]))
    return out


def table(findings: list[Finding], held: dict[str, str] | None = None) -> str:
    """The findings as a table; `held` (fingerprint → reason) marks those a forge would not
    post as an inline thread."""
    held = held or {}
    rows = ["| Severity | File | Line | Category | Title |", "| --- | --- | --- | --- | --- |"]
    rows += [
        f"| {ICONS[f.severity]} {f.severity.label} | {code(f.path, in_table=True)} | {lines(f)} "
        f"| {inline(f.category)} | {inline(f.title)}"
        + (f" *(not inline: {inline(held[f.fingerprint])})*" if f.fingerprint in held else "")
        + " |"
        for f in findings
    ]
    return "\n".join(rows)


def dropped_table(dropped: list[Dropped]) -> str:
    """Candidates that were not kept, each with the stage that dropped it and why."""
    rows = ["| File | Line | Title | Dropped by | Why |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| {code(d.finding.path, in_table=True)} | {lines(d.finding)} | "
             f"{inline(d.finding.title)} | {d.stage} | {inline(d.reason)} |" for d in dropped]
    return "\n".join(rows)


def details(f: Finding) -> str:
    """A collapsed block with the whole finding, for the markdown report."""
    head = html.escape(f"{f.severity.label} · {f.path}:{lines(f)} · {f.title}", quote=False)
    body = [f"<details><summary>{ICONS[f.severity]} {no_actions(one_line(head))}</summary>", ""]
    if f.body.strip():
        body += [prose(f.body.strip()), ""]
    if f.suggestion is not None:
        body += ["Suggested change:", "", fenced(f.suggestion), ""]
    body.append("</details>")
    return "\n".join(body)


def issue_lines(checks: list[IssueCheck]) -> list[str]:
    """One line per linked issue: does the change do what it asks."""
    if not checks:
        return []
    out = ["", "**Linked issues**"]
    for c in checks:
        missing = f"; missing: {inline(c.missing)}" if c.missing and \
            c.verdict is not IssueVerdict.ADDRESSED else ""
        # `#12` (ours, from the forge's number) as is: the forge links it to the issue
        ref = c.ref if re.fullmatch(r"#\d+", c.ref) else inline(c.ref)
        out.append(f"- {ref} {inline(c.title)}: **{c.verdict.words}**{missing}")
    return out


def dismissed_lines(dismissed: list[ScannerDismissal], limit: int = 100) -> list[str]:
    """The scanners' results the model's triage dismissed, each with the reason."""
    if not dismissed:
        return []
    out = ["", f"**Scanner results dismissed** ({len(dismissed)})"]
    out += [f"- {code(d.path)} line {d.line}: {inline(d.tool)} {code(d.rule)}: "
            f"{inline(d.reason) or 'no reason given'}" for d in dismissed[:limit]]
    if len(dismissed) > limit:
        out.append(f"- … and {len(dismissed) - limit} more")
    return out
