"""`reviewbot history` and `reviewbot usage` as a team runs them: CSV a spreadsheet cannot run, and
bad input as one line, exit 2."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

from reviewbot.history import HistoryStore, ReviewOutcome
from tests.test_history import _record, _reviewbot


def test_history_csv_quotes_what_a_spreadsheet_would_run_and_bad_input_is_exit_2(
        tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    HistoryStore.open(db).add(_record("grp/a", time.time(), ReviewOutcome.COMPLETE, 10,
                                      title='=HYPERLINK("http://x","y")'))
    rows = list(csv.DictReader(io.StringIO(
        _reviewbot("history", "--db", str(db), "--output", "csv").stdout)))
    assert rows[0]["title"].startswith("'=HYPERLINK") and rows[0]["outcome"] == "complete"
    for bad in (["history", "--db", str(db), "--since", "yesterday"],
                ["usage", "--db", str(tmp_path / "none.sqlite")],
                ["history", "--db", "postgresql://u:secret-pw@127.0.0.1/x"]):
        proc = _reviewbot(*bad)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "secret-pw" not in proc.stderr
