"""The listener's dashboard with a long history: how long one build of the page takes.

    python benchmarks/dashboard_build.py [--rows 200000] [--days 14] [--projects 300] [--runs 3]

Fills a fresh SQLite history with --rows reviews spread over --days (one insert statement, as
fast as SQLite takes them), then builds and renders the page --runs times and prints each
build's seconds and what the history's queries took alone. Writes only under a temporary
folder; talks to nothing.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from reviewbot.conversation.learnings import LearningStore
from reviewbot.history import COLUMNS, Change, HistoryStore, ReviewOutcome, ReviewRecord
from reviewbot.webhook import dashboard


def fill(db: Path, rows: int, days: int, projects: int, now: float) -> None:
    HistoryStore.open(db)  # its tables and indexes
    values = []
    for i in range(rows):
        r = ReviewRecord.of(Change("gitlab", f"grp/p{i % projects}", i % 5000), "listener",
                            "full", now - (i % (days * 86400)),
                            ReviewOutcome.FAILED if i % 97 == 0 else ReviewOutcome.COMPLETE)
        values.append(tuple(getattr(r, c) for c in COLUMNS))
    with sqlite3.connect(db) as conn:
        conn.executemany(f"INSERT INTO reviews ({', '.join(COLUMNS)}) VALUES "
                         f"({', '.join('?' for _ in COLUMNS)})", values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--projects", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    now = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "queue.sqlite"
        fill(db, args.rows, args.days, args.projects, now)
        history, learnings = HistoryStore.open(db), LearningStore.open(db)
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            dashboard.render(dashboard.build(history, learnings, now))
            print(f"build {run}: {time.monotonic() - started:.2f} s")
        since = now - args.days * 86400
        for name, query in (("recent (5,000 rows)", lambda: history.recent(since=since,
                                                                           limit=5000)),
                            ("sums per project", lambda: history.usage("project", since=since)),
                            ("sums per day", lambda: history.usage("day", since=since))):
            started = time.monotonic()
            query()
            print(f"{name}: {time.monotonic() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
