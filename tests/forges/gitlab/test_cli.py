"""End to end: `reviewbot review --mr` as a real process, the real engine against a scripted
OpenAI-compatible server, posting to the strict fake GitLab."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.canaries import API_KEY, PASSWORD, assert_no_canary, echo_finding, echoed, with_password
from tests.fake_openai import FakeOpenAI, Reply, user_text
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401


def one_finding_per_anchor(body: dict[str, Any], attempt: int) -> Reply:
    """A finding on the first added, removed and context row of every file shown."""
    findings, path, seen = [], "", set()
    for line in user_text(body).split("\n"):
        if line.startswith("=== "):
            path = line[4:]
        match = re.match(r"^([-+])(\d+) ", line)
        if match and (path, match.group(1)) not in seen:
            seen.add((path, match.group(1)))
            findings.append({"severity": "major", "category": "bug",
                             "title": f"check {path} {match.group(1)!r}", "body": "Explained.",
                             "row": int(match.group(2))})
    return Reply(tool_args={"summary": "reviewed", "findings": findings})


def _cli(env: Env, server: FakeOpenAI, *extra: str,
         secrets: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    args = ["review", "--mr", "7", "--project", "grp/proj", "--gitlab-url", env.gitlab.url,
            "--base-url", server.base_url, "--no-progress", "--mode", "full", *extra]
    return subprocess.run([sys.executable, "-m", "reviewbot", *args], check=False, capture_output=True,
                          text=True, timeout=300,
                          env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN, **(secrets or {})},
                          cwd=Path(__file__).parents[3])


def test_review_mr_posts_every_anchored_finding_once_with_zero_400s(env: Env) -> None:
    with FakeOpenAI(one_finding_per_anchor, max_model_len=16000) as server:
        first = _cli(env, server, "--output", "json")
        assert first.returncode == 0, first.stderr
        notes = env.gitlab.diff_notes()
        reported = json.loads(first.stdout)["findings"]
        assert len(notes) == len(reported) >= 6 and 400 not in env.gitlab.statuses()
        assert {n["position"]["old_path"] for n in notes} >= {"src/old_name.py", "docs/removed.md"}
        assert env.gitlab.violations == []
        second = _cli(env, server)
        assert second.returncode == 0, second.stderr
        assert len(env.gitlab.diff_notes()) == len(notes)  # nothing new the second time
    summaries = [n for n in env.gitlab.notes() if not n.get("position")]
    assert len(summaries) == 1 and "Review complete" in summaries[0]["body"]
    for proc in (first, second):
        assert TOKEN not in proc.stdout + proc.stderr


def test_only_what_passes_the_floor_and_the_cap_becomes_a_thread(env: Env) -> None:
    """5 major findings, 2 minor ones and 1 unsure one (a chunk's cap is 8), at most 3 threads:
    the 3 most confident majors become threads, the rest are listed in the summary note, the
    unsure one is only counted; the JSON output keeps all 8, marked."""
    def script(body: dict[str, Any], attempt: int) -> Reply:
        rows = [int(m) for m in re.findall(r"^[-+](\d+) ", user_text(body), re.MULTILINE)]
        findings = [{"row": r, "title": f"major {i}", "body": "Explained.", "category": "bug",
                     "severity": "major", "confidence": 0.6 + i / 100}
                    for i, r in enumerate(rows[:5])]
        findings += [{"row": rows[5 + i], "title": f"minor {i}", "body": "Small.",
                      "category": "bug", "severity": "minor", "confidence": 0.9} for i in range(2)]
        findings.append({"row": rows[7], "title": "unsure", "body": "Maybe.", "category": "bug",
                         "severity": "critical", "confidence": 0.1})
        return Reply(tool_args={"summary": "reviewed", "findings": findings})

    with FakeOpenAI(script, max_model_len=16000) as server:
        proc = _cli(env, server, "--output", "json", "--no-verify", "--max-context", "16000",
                    "--max-inline-comments", "3")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["findings"]) == 8
    marks = {f["title"]: f["held_back"] for f in out["findings"]}
    threads = {n["body"].split(": ", 1)[1].split("\n")[0] for n in env.gitlab.diff_notes()}
    assert threads == {t for t, m in marks.items() if m is None}
    assert threads == {"major 2", "major 3", "major 4"}  # the most confident
    (summary,) = [n["body"] for n in env.gitlab.notes() if not n.get("position")]
    assert "Findings not posted as threads" in summary
    assert all(t in summary for t in ("major 0", "major 1", "minor 0", "minor 1"))
    assert "unsure" not in summary and "Held back: 1 below min_confidence" in summary


def test_a_secret_the_model_echoes_is_never_posted(env: Env) -> None:
    """A steered model repeats the tokens it was never shown (an exfiltration chain would
    bring them in through the repository): every sink gets them scrubbed."""
    api_key = "sk-local-APIKEY-9911"

    def echo(body: dict[str, Any], attempt: int) -> Reply:
        rows = [int(m) for m in re.findall(r"^[-+](\d+) ", user_text(body), re.MULTILINE)]
        leak = f"{TOKEN} and {api_key}"
        return Reply(tool_args={"summary": f"summary {leak}", "findings": [
            {"row": rows[0], "title": f"title {leak}", "body": f"body {leak}",
             "category": "bug", "severity": "critical", "confidence": 0.9}]})

    with FakeOpenAI(echo, max_model_len=16000) as server:
        proc = _cli(env, server, "--output", "json", "--no-verify",
                    secrets={"REVIEWBOT_API_KEY": api_key})
    assert proc.returncode == 0, proc.stderr
    written = proc.stdout + proc.stderr + json.dumps(env.gitlab.notes())
    assert "title ***" in written and "body ***" in written
    assert TOKEN not in written and api_key not in written


def test_python_gitlabs_url_warning_is_scrubbed() -> None:
    """python-gitlab warns with the URL as given (password included) when a server's link names
    another base URL; the CLI's warning hook scrubs it like everything else (run as a process:
    pytest records warnings itself)."""
    password = "url-PASSWORD-4242"
    script = (
        "import gitlab\n"
        "from reviewbot.redact import redacting_warnings, register_url\n"
        f"url = 'http://bot:{password}@127.0.0.1:9'\n"
        "register_url(url)\n"
        "redacting_warnings()\n"
        "gitlab.Gitlab(url, private_token='x')._check_url('http://127.0.0.1:9/api/v4/x?page=2')\n")
    proc = subprocess.run([sys.executable, "-W", "always", "-c", script], capture_output=True,
                          text=True, timeout=60, check=False, cwd=Path(__file__).parents[3])
    assert "base URL in the server response differs" in proc.stderr, proc.stderr
    assert password not in proc.stderr


def test_a_merge_request_that_is_not_there_is_a_usage_error_with_a_hint(env: Env) -> None:
    with FakeOpenAI(one_finding_per_anchor, max_model_len=16000) as server:
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--mr", "999", "--project", "grp/proj",
             "--gitlab-url", env.gitlab.url, "--base-url", server.base_url, "--no-progress"],
            capture_output=True, text=True, timeout=120,
            env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN})
    assert proc.returncode == 2, proc.stderr
    assert "404" in proc.stderr and "404 404" not in proc.stderr
    assert "check --project and --mr" in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []  # no model time on a change that is not there


def test_a_dry_run_says_so_and_shows_the_summary_it_would_post(env: Env) -> None:
    with FakeOpenAI(one_finding_per_anchor, max_model_len=16000) as server:
        proc = _cli(env, server, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert env.gitlab.notes() == []  # nothing posted
    said = re.search(r"dry run, nothing was posted: (\d+) comment\(s\) would be posted", proc.stderr)
    assert said and int(said.group(1)) >= 6, proc.stderr
    assert "the summary note would read:" in proc.stderr and "Review complete" in proc.stderr


@pytest.mark.parametrize("output", ["text", "json", "sarif", "codequality", "markdown"])
def test_no_output_format_carries_a_secret_in_any_case_or_cut(env: Env, tmp_path: Path,
                                                               output: str) -> None:
    """Canaries in every secret setting (the model server's API key, the forge token, the
    password of the model server's URL), echoed by a steered model as given, upper-cased and
    cut to 14 characters: not one reaches stdout, stderr, the output file or the forge."""
    canaries = (API_KEY, TOKEN, PASSWORD)

    def echo(body: dict[str, Any], attempt: int) -> Reply:
        rows = [int(m) for m in re.findall(r"^[-+](\d+) ", user_text(body), re.MULTILINE)]
        return echo_finding(rows[0], echoed(*canaries))

    out = tmp_path / f"report.{output}"
    with FakeOpenAI(echo, max_model_len=16000) as server:
        clean = {k: v for k, v in os.environ.items()
                 if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
             "--gitlab-url", env.gitlab.url, "--no-progress", "--mode", "full", "--no-verify",
             "--output", output, "--output-file", str(out)],
            capture_output=True, text=True, timeout=300, cwd=Path(__file__).parents[3],
            env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN, "REVIEWBOT_API_KEY": API_KEY,
                 "REVIEWBOT_BASE_URL": with_password(server.base_url)}, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert_no_canary(proc.stdout + proc.stderr + out.read_text()
                     + json.dumps(env.gitlab.notes()), *canaries)
