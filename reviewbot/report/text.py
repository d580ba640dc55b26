"""`--output text`: the human report for a terminal or a CI log, drawn with rich.

An incomplete review is announced in a banner above and a verdict below the findings, so a
reader who only sees either end of a long log still cannot take it for a clean review.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from io import StringIO

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.result import ReviewResult, Stats

SEVERITY_STYLE = {
    Severity.BLOCKER: "bold white on red",
    Severity.CRITICAL: "bold red",
    Severity.MAJOR: "bold yellow",
    Severity.MINOR: "cyan",
    Severity.INFO: "dim",
}
PLAIN_WIDTH = 100  # logs and files: wide enough for paths, narrow enough to read

# Model output and diff text are untrusted: an escape sequence in them must not reach a terminal.
_CONTROL = {c: None for c in (*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))}


def render(result: ReviewResult, *, color: bool = False, width: int | None = None) -> str:
    if width is None:
        width = shutil.get_terminal_size().columns if color else PLAIN_WIDTH
    buf = StringIO()
    console = Console(
        file=buf, width=width, force_terminal=color, color_system="auto" if color else None,
        markup=False, emoji=False, highlight=False,
    )
    for part in _parts(result):
        console.print(part)
    # rich pads table cells to the column width; trailing blanks only add noise to logs
    return "\n".join(line.rstrip(" ") for line in buf.getvalue().split("\n"))


def _parts(result: ReviewResult) -> Iterable[RenderableType]:
    stats = result.stats
    if not result.complete:
        yield _banner(stats)
    if result.summary.strip():
        yield Text("Summary", style="bold underline")
        yield Text(_clean(result.summary.strip()))
        yield Text()
    # one "where" width for every table, so that all findings line up
    where_width = max((len(where(f)) for f in result.findings + result.earlier), default=4)
    held = {h.fingerprint: h.reason for h in result.held}
    if result.findings:
        yield Text(f"Findings ({len(result.findings)})", style="bold underline")
        for path, group in _by_file(result.findings):
            yield Text(_clean(path), style="bold magenta")
            yield _table(group, where_width, held)
        yield Text()
    if result.earlier:
        yield Text(f"Still open from earlier reviews ({len(result.earlier)})",
                   style="bold underline")
        yield _table(result.earlier, where_width, {})
        yield Text()
    if result.issues:
        yield Text(f"Linked issues ({len(result.issues)})", style="bold underline")
        for c in result.issues:
            missing = f" (missing: {c.missing})" if c.missing else ""
            yield Text(_clean(f"  {c.ref} {c.title}: {c.verdict.words}{missing}"))
        yield Text()
    if result.scanner_dismissed:
        yield Text(f"Scanner results dismissed ({len(result.scanner_dismissed)})",
                   style="bold underline")
        for r in result.scanner_dismissed:
            yield Text(_clean(f"  {r.path}:{r.line} {r.tool} {r.rule}: {r.reason}"), style="dim")
        yield Text()
    if result.dropped:
        yield Text(f"Dropped candidates ({len(result.dropped)})", style="bold underline")
        for d in result.dropped:
            yield Text(f"  {_clean(d.finding.path)} {where(d.finding)}  {_clean(d.finding.title)}"
                       f"  ({d.stage}: {_clean(d.reason)})", style="dim")
        yield Text()
    if stats.files_skipped:
        yield Text(f"Skipped files ({len(stats.files_skipped)})", style="bold underline")
        skipped = Table.grid(padding=(0, 2))
        skipped.add_column(no_wrap=False)
        skipped.add_column(style="dim")
        for s in stats.files_skipped:
            skipped.add_row(Text(_clean(s.path)), Text(_clean(s.reason)))
        yield skipped
        yield Text()
    yield Text(stats_line(result), style="dim")
    yield _verdict(result)


def _banner(stats: Stats) -> Panel:
    lines = Text(
        f"Only {stats.changed_lines_sent} of {stats.changed_lines} changed lines "
        f"({coverage(stats)}) reached the model. Findings below cover only what was reviewed; "
        "the absence of a finding means nothing here.",
        style="bold",
    )
    for error in stats.errors:
        lines.append(f"\n• {_clean(error)}", style="")
    return Panel(lines, title="REVIEW INCOMPLETE", style="bold red", border_style="bold red")


def _verdict(result: ReviewResult) -> Text:
    if not result.complete:
        return Text("✘ REVIEW INCOMPLETE: do not treat this as a clean review.",
                    style="bold white on red")
    worst = result.worst()
    cut = f" ({result.stats.cut_note()})" if result.stats.cut_note() else ""
    hidden = sum(1 for f in result.findings if f.fingerprint in result.hidden())
    if worst is None and hidden:  # listed above, yet below the noise floor: say both
        return Text(f"Review complete: no finding above the noise floor ({hidden} held back "
                    f"below min_confidence, listed above){cut}.", style="bold yellow")
    if worst is None:
        mark = "Review complete" if cut else "✔ Review complete"  # no tick for a partial line
        return Text(f"{mark}: no findings{cut}.", style="bold yellow" if cut else "bold green")
    return Text(f"Review complete: {count_line(result)}{cut}.", style=SEVERITY_STYLE[worst])


def _by_file(findings: list[Finding]) -> Iterable[tuple[str, list[Finding]]]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.path, []).append(f)
    return groups.items()


def _table(findings: list[Finding], where_width: int, held: dict[str, str]) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(width=2)
    table.add_column(no_wrap=True, width=max(len(s.name) for s in Severity))
    table.add_column(no_wrap=True, width=where_width)
    table.add_column(ratio=1)  # what
    for f in findings:
        table.add_row("", Text(f.severity.label.upper(), style=SEVERITY_STYLE[f.severity]),
                      Text(where(f), style="green" if f.side is Side.NEW else "red"),
                      _what(f, held.get(f.fingerprint)))
    return table


def _what(f: Finding, held: str | None) -> Group:
    head = Text(_clean(f.title), style="bold")
    head.append(f"  [{_clean(f.category)}]", style="dim")
    if f.confidence is not None:
        head.append(f"  confidence {f.confidence:.2f}", style="dim")
    if held is not None:  # a forge would not post it as a thread
        head.append(f"  (not inline: {held})", style="dim")
    parts: list[RenderableType] = [head]
    if f.body.strip():
        parts.append(Text(_clean(f.body.strip())))
    if f.suggestion is not None:
        parts.append(Text("Suggested change:", style="italic"))
        parts.append(Text(_clean(f.suggestion.rstrip("\n")) or "(delete these lines)",
                          style="green"))
    return Group(*parts)


def where(f: Finding) -> str:
    """`L12`, `L12-14`, `L7 old` (a line of the old file), or `file` (no line)."""
    if f.line is None:
        return "file"
    span = f"L{f.line}" if f.end_line in (None, f.line) else f"L{f.line}-{f.end_line}"
    return span if f.side is Side.NEW else f"{span} old"


def coverage(stats: Stats) -> str:
    if stats.changed_lines == 0:
        return "nothing to review"
    cut = f", {stats.changed_lines_cut} cut short" if stats.changed_lines_cut else ""
    skipped = f"; {note}" if (note := stats.skipped_note()) else ""
    return f"{100 * stats.changed_lines_sent / stats.changed_lines:.1f}%{cut}{skipped}"


def count_line(result: ReviewResult) -> str:
    """`3 findings (1 major, 2 minor)`: what the verdict covers (held-back ones not counted),
    with how many of them are still open from earlier reviews."""
    all_ = result.gating()
    counts = [(s, sum(1 for f in all_ if f.severity is s)) for s in reversed(Severity)]
    detail = ", ".join(f"{n} {s.label}" for s, n in counts if n)
    if result.earlier:
        detail += f"; {len(result.earlier)} still open from earlier reviews"
    noun = "finding" if len(all_) == 1 else "findings"
    return f"{len(all_)} {noun} ({detail})" if all_ else "no findings"


def stats_line(result: ReviewResult) -> str:
    s = result.stats
    parts = [
        f"coverage {s.changed_lines_sent}/{s.changed_lines} changed lines ({coverage(s)})",
        f"{s.files_reviewed}/{s.files_total} files reviewed, {len(s.files_skipped)} skipped",
        f"{s.chunks} chunks, {s.requests} requests",
        f"{s.usage.prompt_tokens:,} prompt + {s.usage.completion_tokens:,} completion tokens",
        f"{s.tool_calls_invalid} invalid tool calls, {s.findings_reanchored} re-anchored",
        f"{s.wall_seconds:.1f}s",
    ]
    if result.model:
        parts.append(f"model {_clean(result.model)}")
    return " · ".join(parts)


def _clean(text: str) -> str:
    return text.translate(_CONTROL)
