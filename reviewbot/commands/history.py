"""`reviewbot history` and `reviewbot usage`: every review the listener (or `review --db`)
ran, with its outcome and cost, and those costs summed per project or per day."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from datetime import UTC, datetime

import click

from reviewbot.commands.options import database_option, emit
from reviewbot.db import LISTENER_DB, open_existing
from reviewbot.errors import UsageError
from reviewbot.history import USAGE_KEYS, HistoryStore, ProjectUsage, ReviewRecord

_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# a spreadsheet runs a cell that starts with one of these as a formula (CSV injection)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def since_option(command: click.decorators.FC) -> click.decorators.FC:
    return click.option("--since", default="30d", show_default=True,
                        help="How far back: 90m, 24h, 7d, 4w, or a date (2026-12-01).")(command)


def project_option(command: click.decorators.FC) -> click.decorators.FC:
    return click.option("--project", help="Only this project (GitLab id or path, GitHub "
                                           "owner/name).")(command)


def parse_since(value: str, now: float | None = None) -> float:
    """The epoch seconds `value` names, or a usage error."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"(\d{1,6})([mhdw])", value.strip())
    if m:
        return now - int(m.group(1)) * _UNITS[m.group(2)]
    try:
        return datetime.strptime(value.strip(), "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise UsageError(f"--since {value!r}: give 90m, 24h, 7d, 4w or a date like "
                         "2026-12-01") from None


def open_store(db: str) -> HistoryStore:
    return HistoryStore.of(open_existing(db))


@click.command(name="history")
@database_option("The listener's database: its SQLite file or its postgresql:// URL",
                 LISTENER_DB)
@project_option
@since_option
@click.option("--output", "fmt", type=click.Choice(["text", "json", "csv"]), default="text",
              show_default=True)
@click.option("--limit", type=click.IntRange(1, 100_000), default=1000, show_default=True)
def history(db: str, project: str | None, since: str, fmt: str, limit: int) -> None:
    """Every review, newest first: its outcome, what it reviewed and what it cost."""
    records = open_store(db).recent(project, parse_since(since), limit)
    rows = [r.to_dict() for r in records]
    if fmt == "json":
        emit(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", None)
    elif fmt == "csv":
        emit(to_csv(rows), None)
    else:
        emit("".join(_line(r) + "\n" for r in records) or "no reviews recorded\n", None)


@click.command(name="usage")
@database_option("The listener's database: its SQLite file or its postgresql:// URL",
                 LISTENER_DB)
@click.option("--by", type=click.Choice(USAGE_KEYS), default="project", show_default=True)
@project_option
@since_option
@click.option("--output", "fmt", type=click.Choice(["text", "json", "csv"]), default="text",
              show_default=True)
def usage(db: str, by: str, project: str | None, since: str, fmt: str) -> None:
    """Tokens and the model server's seconds, summed per project or per day (UTC)."""
    sums = open_store(db).usage(by, project, parse_since(since))
    rows: list[dict[str, object]] = [
        {by: u.key, **{k: v for k, v in vars(u).items() if k != "key"}} for u in sums]
    if fmt == "json":
        emit(json.dumps(rows, indent=2, ensure_ascii=False) + "\n", None)
    elif fmt == "csv":
        emit(to_csv(rows), None)
    else:
        emit(_usage_table(by, sums), None)


def to_csv(rows: list[dict[str, object]]) -> str:
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
    return out.getvalue()


def _cell(value: object) -> object:
    """A text that a spreadsheet would run as a formula is quoted as text."""
    return f"'{value}" if isinstance(value, str) and value.startswith(_FORMULA) else value


def _line(r: ReviewRecord) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.started_at))
    tokens = r.prompt_tokens + r.completion_tokens
    what = f"{r.lines_reviewed}/{r.lines_changed} lines, {r.findings_posted} posted"
    reason = f"  {r.reason}" if r.reason else ""
    return (f"{when}  {r.outcome.value:<10} {r.project}!{r.number} {r.head_sha[:10]:<10} "
            f"{r.source:<8} {r.seconds:6.1f} s  {tokens:>9,} tokens  "
            f"{r.server_seconds:7.1f} server-s  {what}{reason}")


def _usage_table(by: str, sums: list[ProjectUsage]) -> str:
    if not sums:
        return "no reviews recorded\n"
    head = (f"{by:<32} {'reviews':>8} {'failed':>7} {'prompt':>13} {'cached':>13} "
            f"{'completion':>11} {'server-s':>10}\n")
    return head + "".join(
        f"{u.key[:32]:<32} {u.reviews:>8} {u.failed:>7} {u.prompt_tokens:>13,} "
        f"{u.cached_tokens:>13,} {u.completion_tokens:>11,} {u.server_seconds:>10.1f}\n"
        for u in sums)
