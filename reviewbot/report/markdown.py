"""`--output markdown`: a report for a forge note, a job summary or a file.

Every piece of text here comes from the model or the diff; findings are rendered by
`reviewbot.rendering` (the renderer the forges use too), the rest through `modeltext` sinks.
"""

from __future__ import annotations

from reviewbot.findings import Finding
from reviewbot.modeltext import code, inline, prose
from reviewbot.rendering import details, dismissed_lines, dropped_table, issue_lines, table
from reviewbot.result import ReviewResult, Stats
from reviewbot.withheld import SkippedFile


def render(result: ReviewResult) -> str:
    parts = [
        "## reviewbot review",
        completeness(result),
        summary(result),
        "\n".join(issue_lines(result.issues)).strip(),
        findings_section("Findings", result.findings,
                         {h.fingerprint: h.reason for h in result.held}),
        findings_section("Still open from earlier reviews", result.earlier),
        dropped_section(result),
        skipped_section(result.stats.files_skipped),
        "\n".join(dismissed_lines(result.scanner_dismissed)).strip(),
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


def findings_section(title: str, findings: list[Finding],
                     held: dict[str, str] | None = None) -> str:
    if not findings:
        return ""
    return "\n\n".join([f"### {title} ({len(findings)})", table(findings, held),
                        *(details(f) for f in findings)])


def dropped_section(result: ReviewResult) -> str:
    if not result.dropped:
        return ""
    return f"### Dropped candidates ({len(result.dropped)})\n\n" + dropped_table(result.dropped)


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
            f"{s.requests} requests · {s.usage.prompt_tokens:,} prompt + {s.usage.completion_tokens:,} "
            f"completion tokens · {s.tool_calls_invalid} invalid tool calls · "
            f"{s.wall_seconds:.1f}s{model}</sub>")


def coverage_text(stats: Stats) -> str:
    cut = f" ({stats.cut_note()})" if stats.changed_lines_cut else ""
    skipped = f"; {note}" if (note := stats.skipped_note()) else ""
    return (f"{stats.changed_lines_sent}/{stats.changed_lines} changed lines reached the "
            f"model{cut}{skipped}")

