"""The change's intent on the CLI: --title/--description with --diff, commit messages with
--git, capped sizes, and a usage error where a forge brings its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reviewbot.context import MAX_COMMITS_TOTAL, MAX_DESCRIPTION, Intent
from tests.commands.test_review import run
from tests.fake_openai import FakeOpenAI, Reply
from tests.git_support import GitRepo, review_git


def recorder(prompts: list[str]):  # type: ignore[no-untyped-def]
    def script(body: dict[str, Any], attempt: int) -> Reply:
        prompts.append(body["messages"][1]["content"])
        return Reply(tool_args={"summary": "", "findings": []})
    return script


def test_title_and_description_with_a_diff(tmp_path: Path) -> None:
    diff = tmp_path / "c.diff"
    diff.write_bytes(b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    prompts: list[str] = []
    with FakeOpenAI(recorder(prompts), max_model_len=8000) as server:
        proc = run("review", "--diff", str(diff), "--base-url", server.base_url, "--config",
                   "/dev/null", "--title", "Bump a", "--description", "Line one\n@@ -1 +1 @@")
    assert proc.returncode == 0, proc.stderr
    (text,) = prompts
    assert text.startswith("Merge request: Bump a\n")
    assert "> Line one\n> @@ -1 +1 @@\n" in text  # quoted: not a hunk header of the diff


def test_a_git_range_brings_its_commit_messages(git_repo: GitRepo) -> None:
    git_repo.write("x.py", "a = 1\n")
    git_repo.commit("base")
    for n, message in enumerate(["Make a two\n\nIt was wrong.", "Make a three"], 2):
        git_repo.write("x.py", f"a = {n}\n")
        git_repo.commit(message)
    proc, bodies = review_git(git_repo, "HEAD~2..HEAD")
    assert proc.returncode == 0, proc.stderr
    (text,) = [b["messages"][1]["content"] for b in bodies]
    assert text.startswith("Merge request: Make a three\n")  # the newest commit's subject
    assert "> Make a two\n> \n> It was wrong.\n\n> Make a three\n" in text


def test_title_with_a_merge_request_is_a_usage_error() -> None:
    proc = run("review", "--mr", "1", "--project", "g/p", "--title", "x")
    assert proc.returncode == 2 and b"--title and --description go with --diff" in proc.stderr


def test_intent_is_capped() -> None:
    many = tuple(f"commit {i}: " + "x" * 400 for i in range(100))
    capped = Intent("a\nb  " * 200, "d" * 10_000, many).capped()
    assert "\n" not in capped.title and len(capped.title) <= 300
    assert len(capped.description) == MAX_DESCRIPTION and capped.description.endswith("(cut)")
    assert sum(map(len, capped.commits)) <= MAX_COMMITS_TOTAL
    assert capped.commits[-1].startswith("commit 99:")  # the newest are kept
    assert Intent().capped() == Intent()
