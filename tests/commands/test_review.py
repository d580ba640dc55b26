"""`reviewbot review` as a user runs it: a real process, real exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, Reply, row_of

DIFF = b"""diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
 import os
-x = os.environ["A"]
+x = eval(os.environ["A"])
 print(x)
"""


def run(*args: str, stdin: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reviewbot", *args], input=stdin, text=False,
                          capture_output=True, timeout=120, env=env)


def blocker(body: dict, attempt: int) -> Reply:
    row = row_of(body, "x = eval(")
    return Reply(tool_args={"summary": "eval of env input", "findings": [
        {"severity": "blocker", "category": "security", "title": "eval on environment input",
         "body": "Arbitrary code execution.", "suggestion": 'x = os.environ["A"]', "row": row}]})


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_bytes(DIFF)
    return path


def test_json_output_matches_the_contract(diff_file: Path) -> None:
    with FakeOpenAI(blocker, max_model_len=8000) as server:
        proc = run("review", "--diff", str(diff_file), "--base-url", server.base_url,
                   "--output", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"findings", "summary", "stats"}
    (f,) = out["findings"]
    assert set(f) == {"path", "line", "side", "end_line", "severity", "category", "title", "body",
                      "suggestion", "fingerprint", "confidence", "held_back"}
    assert (f["path"], f["line"], f["side"], f["severity"]) == ("app.py", 2, "new", "blocker")
    stats = out["stats"]
    assert {"files_total", "files_reviewed", "files_skipped", "changed_lines", "changed_lines_sent",
            "chunks", "requests", "prompt_tokens", "completion_tokens", "tool_calls_invalid",
            "wall_seconds", "complete", "errors"} <= set(stats)
    assert stats["complete"] is True and stats["changed_lines_sent"] == stats["changed_lines"] == 2


def test_fail_on_gives_exit_1_and_stdin_works() -> None:
    with FakeOpenAI(blocker, max_model_len=8000) as server:
        proc = run("review", "--diff", "-", "--base-url", server.base_url, "--fail-on", "critical",
                   "--output", "json", stdin=DIFF)
    assert proc.returncode == 1, proc.stderr


def test_incomplete_review_exits_3_and_is_never_clean(diff_file: Path) -> None:
    with FakeOpenAI(lambda b, n: Reply(status=500), max_model_len=8000) as server:
        proc = run("review", "--diff", str(diff_file), "--base-url", server.base_url,
                   "--output", "json", "--config", "/dev/null")
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["stats"]["complete"] is False


def test_model_not_served_lists_the_served_ones(diff_file: Path) -> None:
    with FakeOpenAI(blocker, model="qwen-coder") as server:
        proc = run("review", "--diff", str(diff_file), "--base-url", server.base_url,
                   "--model", "gpt-9")
    assert proc.returncode == 2
    assert b"qwen-coder" in proc.stderr and b"Traceback" not in proc.stderr


@pytest.mark.parametrize("args,stdin,code,needle", [
    (["review", "--diff", "-"], b"", 2, "empty"),
    (["review", "--diff", "-"], b"hello world\n", 2, "not a unified diff"),
    (["review", "--diff", "/nonexistent/x.diff"], None, 2, "cannot read diff file"),
    (["review", "--diff", "-", "--concurrency", "-1"], DIFF, 2, "concurrency"),
    (["review", "--diff", "-", "--base-url", "http://127.0.0.1:9/v1"], DIFF, 3, "127.0.0.1:9"),
    (["review", "--git", "no-such-ref..HEAD"], None, 2, "git diff"),
    (["review"], None, 2, "exactly one of"),
    # recorded nothing, silently
    (["review", "--diff", "-", "--db", "sqlite:///x.sqlite"], DIFF, 2, "--db records reviews"),
])
def test_bad_input_is_one_line_with_a_documented_exit_code(args, stdin, code, needle) -> None:
    proc = run(*args, stdin=stdin)
    err = proc.stderr.decode()
    assert proc.returncode == code, err
    assert needle in err
    assert "Traceback" not in err
    assert len(err.strip().split("\n")) == 1


def test_bad_config_file(tmp_path: Path, diff_file: Path) -> None:
    cfg = tmp_path / "rb.toml"
    cfg.write_text("concurrency = 'many'\n")
    proc = run("review", "--diff", str(diff_file), "--config", str(cfg))
    assert proc.returncode == 2 and "concurrency" in proc.stderr.decode()
    cfg.write_text("[reviewbot]\nunknown_key = 1\n")
    proc = run("review", "--diff", str(diff_file), "--config", str(cfg))
    assert proc.returncode == 2 and "unknown_key" in proc.stderr.decode()


def test_api_key_never_appears_in_errors(diff_file: Path) -> None:
    secret = "sk-very-secret-key-123"
    with FakeOpenAI(lambda b, n: Reply(status=401, error=f"bad key {secret}")) as server:
        proc = run("review", "--diff", str(diff_file), "--base-url", server.base_url,
                   "--output", "json", env={**{k: v for k, v in os.environ.items()
                                               if not k.startswith("REVIEWBOT_")},
                                            "REVIEWBOT_API_KEY": secret})
    said = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 3 and "rejected the API key" in said
    assert secret not in proc.stdout.decode() + proc.stderr.decode()


@pytest.mark.parametrize("flag, variable", [("--api-key", "REVIEWBOT_API_KEY"),
                                            ("--gitlab-token", "REVIEWBOT_GITLAB_TOKEN"),
                                            ("--github-token", "GITHUB_TOKEN")])
def test_a_secret_on_the_command_line_is_refused_naming_its_variable(
        diff_file: Path, flag: str, variable: str) -> None:
    """`ps` shows every process's arguments to every user of the machine."""
    secret = "glpat-Kq7vX2pN9wR4tZ8mJ3"
    proc = run("review", "--diff", str(diff_file), flag, secret)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and f"set {variable} instead" in err
    assert secret not in err + proc.stdout.decode() and len(err.strip().splitlines()) == 1


def test_output_file_gets_the_report_and_the_log_gets_the_summary(diff_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "gl-code-quality-report.json"
    with FakeOpenAI(blocker, max_model_len=8000) as server:
        proc = run("review", "--diff", str(diff_file), "--base-url", server.base_url,
                   "--output", "codequality", "--output-file", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    issues = json.loads(out.read_text())
    assert issues and issues[0]["location"]["path"] == "app.py"
    assert b"Findings: 1 (1 blocker)" in proc.stderr and str(out).encode() in proc.stderr
