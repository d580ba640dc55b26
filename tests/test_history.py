"""The history of reviews: rows on real SQLite and PostgreSQL, `reviewbot review --mr --db`
recording a real review (tokens, the server's seconds, its outcome, a failure), and
`reviewbot history` / `reviewbot usage` reading them back (text, JSON, CSV)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from reviewbot.history import Change, HistoryStore, ReviewOutcome, ReviewRecord
from reviewbot.result import ReviewResult, Stats, Usage
from tests.canaries import API_KEY, PASSWORD, assert_no_canary, echo_finding, echoed, with_password
from tests.fake_openai import FakeOpenAI
from tests.forges.gitlab.test_cli import _cli, one_finding_per_anchor
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401

ROOT = Path(__file__).parents[1]
KV = b'vllm:cache_config_info{block_size="16",num_gpu_blocks="1000"} 1.0\n'  # 16,000 tokens


def _record(project: str, started: float, outcome: ReviewOutcome, tokens: int,
            title: str = "t") -> ReviewRecord:
    stats = Stats(files_total=2, files_reviewed=2, changed_lines=10, changed_lines_sent=10,
                  usage=Usage(prompt_tokens=tokens, cached_tokens=tokens // 2,
                              completion_tokens=tokens // 10), server_seconds=tokens / 1000)
    result = ReviewResult(findings=[], summary="", stats=stats)
    return ReviewRecord.of(Change("gitlab", project, 7, "a" * 40, "https://g/mr/7", title),
                           "listener", "full", started, outcome, "", result, posted=1)


def test_rows_and_sums_on_each_database(queue_url: str) -> None:
    store = HistoryStore.open(queue_url)
    day = 86400.0
    now = time.time()
    store.add(_record("grp/a", now - 2 * day, ReviewOutcome.COMPLETE, 1000))
    store.add(_record("grp/a", now - 1, ReviewOutcome.FAILED, 0))
    store.add(_record("grp/b", now - 1, ReviewOutcome.COMPLETE, 3000, title="\x1b[31mred\u202e"))
    recent = store.recent()
    assert [r.project for r in recent][-1] == "grp/a" and len(recent) == 3
    assert recent[0].title == "[31mred"  # no terminal escape, no bidi override kept
    assert [r.project for r in store.recent(since=now - day)] == ["grp/b", "grp/a"]
    by = {u.key: u for u in store.usage("project")}
    assert (by["grp/a"].reviews, by["grp/a"].failed, by["grp/a"].prompt_tokens) == (2, 1, 1000)
    assert (by["grp/b"].cached_tokens, by["grp/b"].server_seconds) == (1500, 3.0)
    assert sum(u.reviews for u in store.usage("day")) == 3
    # summed by the database, a UTC day each, whatever its rounding: 0.3 s before a midnight
    midnight = (now // day - 3) * day
    store.add(_record("grp/c", midnight - 0.3, ReviewOutcome.COMPLETE, 10))
    days = {u.key: u.reviews for u in store.usage("day", project="grp/c")}
    assert days == {time.strftime("%Y-%m-%d", time.gmtime(midnight - day)): 1}


def _reviewbot(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    return subprocess.run([sys.executable, "-m", "reviewbot", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT, check=False)


def test_a_cli_review_with_db_is_a_row_with_its_tokens_and_the_servers_share(
        env: Env, tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    with FakeOpenAI(one_finding_per_anchor, max_model_len=16000) as server:
        server.metrics = KV
        proc = _cli(env, server, "--output", "json", "--db", str(db))
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
    rows = json.loads(_reviewbot("history", "--db", str(db), "--output", "json").stdout)
    assert len(rows) == 1
    row, stats = rows[0], report["stats"]
    assert (row["outcome"], row["source"], row["mode"], row["number"]) == \
        ("complete", "cli", "full", 7)
    assert row["prompt_tokens"] == stats["prompt_tokens"] > 0
    assert row["completion_tokens"] == stats["completion_tokens"]
    assert row["lines_reviewed"] == row["lines_changed"] == stats["changed_lines"]
    assert row["findings_posted"] == len(env.gitlab.diff_notes()) > 0
    # the review held part of a 16,000-token cache for part of its time: less than its wall
    assert 0 < row["server_seconds"] < stats["wall_seconds"]
    usage = json.loads(_reviewbot("usage", "--db", str(db), "--output", "json").stdout)
    assert usage == [{"project": "grp/proj", "reviews": 1, "failed": 0,
                      "prompt_tokens": row["prompt_tokens"], "cached_tokens": row["cached_tokens"],
                      "completion_tokens": row["completion_tokens"],
                      "server_seconds": row["server_seconds"]}]


def test_a_review_that_fails_is_a_row_saying_why(env: Env, tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    with FakeOpenAI(one_finding_per_anchor) as server:
        url = server.base_url
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
         "--gitlab-url", env.gitlab.url, "--base-url", url, "--no-progress", "--db", str(db)],
        capture_output=True, text=True, timeout=120,
        env={**clean, "REVIEWBOT_GITLAB_TOKEN": "glpat-SECRET-t0ken-1234"}, cwd=ROOT, check=False)
    assert proc.returncode == 3, proc.stderr  # the model server is gone
    text = _reviewbot("history", "--db", str(db)).stdout
    assert "failed" in text and "grp/proj!7" in text and "reach" in text


def test_no_secret_reaches_history_in_any_output_from_a_review_or_a_failure(
        env: Env, tmp_path: Path) -> None:
    """A model echoing the secrets, then a model server gone while its URL (with a password)
    is in the failure's reason: history's text, JSON and CSV carry none of them."""
    db, canaries = tmp_path / "state.sqlite", (API_KEY, TOKEN, PASSWORD)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    secrets = {**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN, "REVIEWBOT_API_KEY": API_KEY}

    def review(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
             "--gitlab-url", env.gitlab.url, "--no-progress", "--no-verify", "--mode", "full",
             "--db", str(db)],
            capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
            env={**secrets, "REVIEWBOT_BASE_URL": with_password(url)})

    with FakeOpenAI(lambda body, n: echo_finding(1, echoed(*canaries)),
                    max_model_len=16000) as server:
        assert review(server.base_url).returncode in (0, 1)
    assert review(server.base_url).returncode == 3  # gone: a failure with a reason
    shown = [_reviewbot("history", "--db", str(db), "--output", form).stdout
             for form in ("text", "json", "csv")]
    assert "failed" in shown[0] and "complete" in shown[0]
    assert_no_canary("".join(shown), *canaries)




def test_a_failed_attempt_is_a_row_with_its_reason_one_line_and_capped() -> None:
    row = ReviewRecord.failed(Change("gitlab", "g/p", 3), "listener", time.time() - 2,
                              "cannot reach\nthe forge " + "x" * 900)
    assert row.outcome is ReviewOutcome.FAILED and row.mode == "" and row.head_sha == ""
    assert "\n" not in row.reason and len(row.reason) <= 501 and row.seconds >= 2
    leaked = ReviewRecord.failed(Change("gitlab", "g/p", 3), "cli", time.time(),
                                 "cannot reach http://bot:hunter2-pw@10.0.0.5/v1")
    assert "hunter2" not in leaked.reason and "http://***@10.0.0.5/v1" in leaked.reason
