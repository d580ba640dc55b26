"""The CI gate covers the bot's open findings on the merge request, not only this run's: a
pipeline Retry, an unrelated push or a pause cannot turn a failed gate green, and what is held
back below the noise floor decides nothing. `reviewbot review --mr` as a real process against
the strict fake GitLab and a scripted model server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fake_openai import FakeOpenAI, Reply, user_text
from tests.forges.gitlab_support import TOKEN, Env, env_fixture  # noqa: F401


def _on_app_py(body: dict[str, Any], attempt: int) -> Reply:
    """One sure major finding on the first added row of src/app.py, and an unsure critical one
    on its second; nothing elsewhere."""
    text, rows, path = user_text(body), [], ""
    for line in text.split("\n"):
        if line.startswith("=== "):
            path = line[4:].split(" (")[0]
        match = re.match(r"^\+(\d+) ", line)
        if match and path == "src/app.py":
            rows.append(int(match.group(1)))
    findings = [{"row": rows[0], "severity": "major", "category": "bug", "title": "sure thing",
                 "body": "Explained.", "confidence": 0.9},
                {"row": rows[1], "severity": "critical", "category": "security",
                 "title": "a hunch", "body": "Maybe.", "confidence": 0.1}] if rows else []
    return Reply(tool_args={"summary": "reviewed", "findings": findings})


def _cli(env: Env, server: FakeOpenAI, tmp: Path, *extra: str
         ) -> tuple[int, list[dict[str, Any]]]:
    report = tmp / "gl-code-quality-report.json"
    report.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    args = ["review", "--mr", "7", "--project", "grp/proj", "--gitlab-url", env.gitlab.url,
            "--base-url", server.base_url, "--no-progress",
            "--no-verify", "--mode", "incremental", "--fail-on", "major",
            "--output", "codequality", "--output-file", str(report), *extra]
    proc = subprocess.run([sys.executable, "-m", "reviewbot", *args], check=False,
                          capture_output=True, text=True, timeout=300,
                          env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN},
                          cwd=Path(__file__).parents[2])
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(report.read_text())


def _titles(issues: list[dict[str, Any]]) -> list[str]:
    return sorted(i["description"] for i in issues)


def test_a_retry_and_an_unrelated_push_keep_a_failed_gate_failed(env: Env, tmp_path: Path) -> None:
    with FakeOpenAI(_on_app_py, max_model_len=16000) as server:
        code, first = _cli(env, server, tmp_path)
        assert code == 1 and _titles(first) == ["sure thing"]  # the hunch is held back
        code, retried = _cli(env, server, tmp_path)  # a pipeline Retry: the same head
        assert code == 1
        assert _titles(retried) == ["sure thing (still open from an earlier review)"]
        assert [i["fingerprint"] for i in retried] == [i["fingerprint"] for i in first]
        requests = len(server.requests)
        env.repo.write({"src/later.py": "def later():\n    return 1\n"})
        env.gitlab.push(env.repo.commit("an unrelated push"))
        code, pushed = _cli(env, server, tmp_path)
        assert len(server.requests) > requests  # the new commit was reviewed
        assert code == 1 and _titles(pushed) == _titles(retried)
        # a human resolves the thread: the finding no longer holds the gate
        assert env.gitlab.resolve_by_human(lambda n: "sure thing" in n["body"]) == 1
        code, resolved = _cli(env, server, tmp_path)
        assert code == 0 and resolved == []


def test_findings_held_back_below_the_floor_decide_nothing(env: Env, tmp_path: Path) -> None:
    def only_hunches(body: dict[str, Any], attempt: int) -> Reply:
        reply = _on_app_py(body, attempt)
        args = reply.tool_args or {}
        findings = [f for f in args.get("findings", []) if f["title"] == "a hunch"]
        return Reply(tool_args={"summary": "reviewed", "findings": findings})

    with FakeOpenAI(only_hunches, max_model_len=16000) as server:
        code, issues = _cli(env, server, tmp_path, "--fail-on", "info")
    assert code == 0 and issues == []  # nothing was posted, so nothing fails or is listed
    assert env.gitlab.diff_notes() == []
