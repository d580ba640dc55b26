"""Fixtures for the GitHub tests: a real git repo with a realistic PR, the fake server, a forge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviewbot.config import Settings
from reviewbot.diff import ChangeSet, Side
from reviewbot.findings import Finding, Severity
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.forge import GitHubForge
from reviewbot.result import ReviewResult, Stats
from tests.forges.fake_github import FakeGitHub, Server
from tests.forges.github_repo import GitRepo

APP_OLD = "".join(f"line {i}\n" for i in range(1, 41))
APP_NEW = APP_OLD.replace("line 5\n", "line 5 changed\nline 5b added\n").replace(
    "line 30\n", "line thirty\n")
PNG_OLD = b"\x89PNG\r\n\x1a\n\x00\x00\x00binary-one\x00"
PNG_NEW = b"\x89PNG\r\n\x1a\n\x00\x00\x00binary-two\x00\xff"
MOVED = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(10))


def scenario(repo: GitRepo) -> tuple[str, str]:
    """A base and a head commit: modify (2 hunks), rename+edit, delete, add, binary, pure rename."""
    repo.write("src/app.py", APP_OLD)
    repo.write("src/old_name.py", MOVED)
    repo.write("docs/removed.md", "gone 1\ngone 2\ngone 3\n")
    repo.write("assets/logo.png", PNG_OLD)
    repo.write("README.md", "# widgets\n\nSome text.\n")
    base = repo.commit("base")
    repo.write("src/app.py", APP_NEW)
    repo.move("src/old_name.py", "src/new_name.py")
    repo.write("src/new_name.py", MOVED.replace("return 4", "return 44"))
    repo.remove("docs/removed.md")
    repo.write("src/added.py", "import os\n\nprint(os.getcwd())\n")
    repo.write("assets/logo.png", PNG_NEW)
    repo.move("README.md", "docs/README.md")
    head = repo.commit("head")
    return base, head


@pytest.fixture(name="fake")
def fake_github(tmp_path: Path) -> Iterator[FakeGitHub]:
    """The fake GitHub serving PR #7 of `scenario`; import it to use the `fake` fixture."""
    repo = GitRepo(tmp_path / "repo")
    base, head = scenario(repo)
    gh = FakeGitHub(repo)
    gh.open_pull(base, head, number=7)
    with Server(gh) as running:
        yield running


def settings(fake: FakeGitHub, **over: Any) -> Settings:
    return Settings(github_url=fake.base_url, github_token=fake.token, retries=3, **over)


def forge(fake: FakeGitHub, number: int = 7, **client: Any) -> GitHubForge:
    fast = {"seconds_between_writes": 0.0, "seconds_between_requests": 0.0, "backoff": 0.05}
    return GitHubForge(ForgeSettings.github(settings(fake)), fake.full_name, number,
                       **{**fast, **client})


def finding(path: str, line: int | None, side: Side = Side.NEW, *, end: int | None = None,
            suggestion: str | None = None, title: str = "", fp: str = "") -> Finding:
    title = title or f"issue at {path}:{line}{'-' + str(end) if end else ''} {side.value}"
    return Finding(path=path, line=line, side=side, severity=Severity.MAJOR, title=title,
                   body="Explanation.", end_line=end, suggestion=suggestion,
                   fingerprint=fp or f"fp-{abs(hash((path, line, side, end, title))):x}")


class Reviewer:
    """A deterministic reviewer: one finding on every N-th commentable line of every text file.

    Real code over the real ChangeSet (no mocks): it alternates sides, adds ranges and
    suggestions, and records every ChangeSet it was asked to review.
    """

    def __init__(self, every: int = 1, extra: list[Finding] | None = None,
                 removed: bool = True) -> None:
        self.every = every
        self.removed = removed
        self.extra = extra or []
        self.seen: list[ChangeSet] = []

    def __call__(self, changes: ChangeSet, intent: object = None) -> ReviewResult:
        self.seen.append(changes)
        out: list[Finding] = []
        for file in changes.files:
            for hunk in file.hunks:
                for i, line in enumerate(hunk.lines):
                    if i % self.every or (line.kind == "-" and not self.removed):
                        continue
                    side, number = line.positions()[0]  # new side, or old for removed lines
                    out.append(Finding(
                        path=file.path, line=number, side=side, severity=Severity.MINOR,
                        title=f"look at {line.text.strip()[:30]}", body="Because.",
                        suggestion=(line.text + "  # fixed") if line.kind == "+" else None))
        stats = Stats(files_total=len(changes.files), files_reviewed=len(changes.files),
                      changed_lines=changes.changed_lines, changed_lines_sent=changes.changed_lines)
        return ReviewResult(findings=out + list(self.extra), summary="",
                            stats=stats, model="test-model", base_url="http://127.0.0.1:1/v1")
