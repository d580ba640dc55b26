"""`/dashboard`: the listener's reviews at a glance, rendered on the server as one HTML page
with inline SVG plots (no script, no CDN).

Every text on it (titles, project names, reasons, links) came from a forge or a model: the
template escapes each one (autoescape), a link is kept only when it is http(s), and the page
forbids scripts by its own Content-Security-Policy as well.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import jinja2

from reviewbot.conversation.learnings import FindingOutcome, LearningStore
from reviewbot.history import HistoryStore, ReviewOutcome, ReviewRecord

DAYS = 14
RECENT = 50
MAX_ROWS = 5000  # of the latest attempts read for the attention list and the timings
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    height: float  # of the plot's 100


@dataclass(frozen=True)
class ProjectRow:
    project: str
    reviews: int
    failed: int
    tokens: int
    server_seconds: float
    accepted: int
    dismissed: int
    share: float  # of the busiest project's server seconds, 0..1


@dataclass(frozen=True)
class Board:
    generated: str
    attention: list[ReviewRecord]  # changes whose latest attempt failed or was incomplete
    recent: list[ReviewRecord]
    per_day: list[Bar]
    median_s: float
    p95_s: float
    projects: list[ProjectRow]


def build(history: HistoryStore, learnings: LearningStore, now: float | None = None) -> Board:
    now = time.time() if now is None else now
    # at most MAX_ROWS rows are read; the bars and the projects' sums come summed by the
    # database (200,000 rows read one by one took 9 s and starved the listener's intake)
    rows = history.recent(since=now - DAYS * 86400, limit=MAX_ROWS)
    latest: dict[tuple[str, str, int], ReviewRecord] = {}
    for r in rows:  # newest first: the first seen of each change is its latest attempt
        latest.setdefault((r.forge, r.project, r.number), r)
    attention = [r for r in latest.values() if r.outcome is not ReviewOutcome.COMPLETE]
    times = sorted(r.seconds for r in rows if r.outcome is ReviewOutcome.COMPLETE)
    return Board(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now)), attention,
                 rows[:RECENT], _per_day(history, now), _quantile(times, 0.5),
                 _quantile(times, 0.95), _projects(history, learnings, now))


def _quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def _per_day(history: HistoryStore, now: float) -> list[Bar]:
    days = [time.strftime("%Y-%m-%d", time.gmtime(now - d * 86400))
            for d in range(DAYS - 1, -1, -1)]
    counts = dict.fromkeys(days, 0)
    for u in history.usage("day", since=now - DAYS * 86400):
        if u.key in counts:
            counts[u.key] = u.reviews
    top = max(counts.values()) or 1
    return [Bar(d[5:], n, 100 * n / top) for d, n in counts.items()]


def _projects(history: HistoryStore, learnings: LearningStore, now: float) -> list[ProjectRow]:
    tally = learnings.tally(days=DAYS)
    sums = history.usage("project", since=now - DAYS * 86400)
    top = max((u.server_seconds for u in sums), default=0.0) or 1.0
    return [ProjectRow(u.key, u.reviews, u.failed, u.prompt_tokens + u.completion_tokens,
                       u.server_seconds, tally.get(u.key, {}).get(FindingOutcome.ACCEPTED, 0),
                       tally.get(u.key, {}).get(FindingOutcome.DISMISSED, 0), u.server_seconds / top)
            for u in sorted(sums, key=lambda u: -u.server_seconds)]


def safe_link(url: str) -> str:
    """`url` when it is an http(s) link, else "" (a `javascript:` URL is never a link)."""
    return url if url.lower().startswith(("https://", "http://")) else ""


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    loader = jinja2.FileSystemLoader(str(resources.files("reviewbot.pages")))
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["link"] = safe_link
    env.filters["when"] = lambda t: time.strftime("%m-%d %H:%M", time.gmtime(t))
    return env


def render(board: Board) -> str:
    return _environment().get_template("dashboard.html.j2").render(b=board, csp=CSP)
