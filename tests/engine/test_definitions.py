"""Definitions from other files: the names added lines call, found once per review with git
grep at the head, shown after the code around the hunks, without rows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from reviewbot.definitions import called_names, defined_in, git_finder
from tests.fake_openai import FakeOpenAI, Reply, row_ranges

LIB = "def normalize(value):\n    if value is None:\n        return ''\n    return value.strip()\n" \
      "\n\ndef twice(x):\n    return 2 * x\n\n\ndef twice_again(x):\n    return 4 * x\n"


def test_names_are_the_calls_of_added_lines_minus_what_the_chunk_defines() -> None:
    added = ["    name = normalize(raw)", "    items.append(parse_item(x))", "    print(len(a))",
             "def parse_item(x):", "    return helper.convert(x) if x else None"]
    assert called_names(added, defined_in(added)) == ["convert", "normalize"]


def _repo(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "app.py").write_text("from lib import normalize\n\n\ndef handle(raw):\n"
                                     "    return raw\n")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    (tmp_path / "app.py").write_text("from lib import normalize\n\n\ndef handle(raw):\n"
                                     "    return normalize(raw)\n")
    git("commit", "-q", "-am", "Normalize the input")


def test_git_grep_finds_the_definition_and_its_body(tmp_path: Path) -> None:
    _repo(tmp_path)

    def read(path: str) -> list[str] | None:
        return (tmp_path / path).read_text().split("\n")

    (d,) = git_finder("HEAD", str(tmp_path))(["normalize", "missing_name"], read)
    assert (d.path, d.first, d.last) == ("lib.py", 1, 4) and d.lines[-1] == "    return value.strip()"


def test_a_git_review_shows_the_definition_a_change_calls(tmp_path: Path) -> None:
    _repo(tmp_path)
    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any], n: int) -> Reply:
        seen.append(body)
        return Reply(tool_args={"summary": "", "findings": []})

    with FakeOpenAI(script, max_model_len=16000) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--git", "HEAD~1..HEAD", "--base-url",
             server.base_url, "--config", "/dev/null", "--no-verify"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[2])})
    assert proc.returncode == 0, proc.stderr
    (body,) = seen
    user = body["messages"][1]["content"]
    assert "=== lib.py lines 1-4 (definition of normalize, head, not in the diff)\n" \
           "|def normalize(value):" in user
    shown_rows = {int(m) for m in re.findall(r"^[-+ ](\d+)\|", user, re.MULTILINE)}
    assert {r for lo, hi in row_ranges(body) for r in range(lo, hi + 1)} == shown_rows
