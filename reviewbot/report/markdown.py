"""`--output markdown`: a report for a forge note, a job summary or a file.

Every piece of text here comes from the model or the diff, so it is escaped for the context it
lands in: table cells (`|`, newlines, markdown syntax), inline code (backtick runs), HTML in
`<summary>`, and free prose (unbalanced fences, raw HTML). The section functions are public so
that a forge's summary note can reuse them.
"""

from __future__ import annotations

import html

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.modeltext import code, fenced, inline, no_actions, one_line, prose
from reviewbot.result import ReviewResult, SkippedFile, Stats

ICONS = {
    Severity.BLOCKER: "⛔",
    Severity.CRITICAL: "🔴",
    Severity.MAJOR: "🟠",
    Severity.MINOR: "🟡",
    Severity.INFO: "🔵",
}


def render(result: ReviewResult) -> str:
    parts = [
        "## reviewbot review",
        completeness(result),
        summary(result),
        findings_section("Findings", result.findings),
        findings_section("Findings not on a changed line", result.unanchored),
        skipped_section(result.stats.files_skipped),
        stats_section(result),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


# --- sections ----------------------------------------------------------------------------------

def completeness(result: ReviewResult) -> str:
    stats = result.stats
    if result.complete:
        return f"✅ **Complete**: {coverage_text(stats)}."
    lines = [
        "> [!CAUTION]",
        (f"> ❌ **REVIEW INCOMPLETE**: only {coverage_text(stats)}. Findings below cover only "
         "what was reviewed; the absence of a finding means nothing here."),
    ]
    lines += [f"> - {inline(e)}" for e in stats.errors]
    return "\n".join(lines)


def summary(result: ReviewResult) -> str:
    text = result.summary.strip()
    return f"### Summary\n\n{prose(text)}" if text else ""


def findings_section(title: str, findings: list[Finding]) -> str:
    if not findings:
        return ""
    return "\n\n".join([f"### {title} ({len(findings)})", findings_table(findings),
                        *(details(f) for f in findings)])


def findings_table(findings: list[Finding]) -> str:
    rows = ["| Severity | File | Line | Category | Title |", "| --- | --- | --- | --- | --- |"]
    rows += [
        f"| {ICONS[f.severity]} {f.severity.label} | {code(f.path, in_table=True)} | {line_label(f)} "
        f"| {inline(f.category)} | {inline(f.title)} |"
        for f in findings
    ]
    return "\n".join(rows)


def details(f: Finding) -> str:
    head = html.escape(f"{f.severity.label} · {f.path}:{line_label(f)} · {f.title}", quote=False)
    body = [f"<details><summary>{ICONS[f.severity]} {no_actions(one_line(head))}</summary>", ""]
    if f.body.strip():
        body += [prose(f.body.strip()), ""]
    if f.suggestion is not None:
        body += ["Suggested change:", "", fenced(f.suggestion), ""]
    body.append("</details>")
    return "\n".join(body)


def skipped_section(skipped: list[SkippedFile]) -> str:
    if not skipped:
        return ""
    rows = [f"### Skipped files ({len(skipped)})", "", "| File | Reason |", "| --- | --- |"]
    rows += [f"| {code(s.path, in_table=True)} | {inline(s.reason)} |"
             for s in skipped]
    return "\n".join(rows)


def stats_section(result: ReviewResult) -> str:
    s = result.stats
    model = f" · model {code(result.model)}" if result.model else ""
    return (f"<sub>{s.files_reviewed}/{s.files_total} files reviewed · {s.chunks} chunks · "
            f"{s.requests} requests · {s.prompt_tokens:,} prompt + {s.completion_tokens:,} "
            f"completion tokens · {s.tool_calls_invalid} invalid tool calls · "
            f"{s.wall_seconds:.1f}s{model}</sub>")


def coverage_text(stats: Stats) -> str:
    return f"{stats.changed_lines_sent}/{stats.changed_lines} changed lines reached the model"


def line_label(f: Finding) -> str:
    if f.line is None:
        return "file"
    span = str(f.line) if f.end_line in (None, f.line) else f"{f.line}–{f.end_line}"
    return span if f.side is Side.NEW else f"{span} (old)"
