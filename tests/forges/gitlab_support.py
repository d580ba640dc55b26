"""Fixtures for the GitLab tests: a real repo with a realistic MR, the fake GitLab, a reviewer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import gitlab
import pytest

from reviewbot.diff import ChangeSet, Side
from reviewbot.findings import Finding, Severity
from reviewbot.forges.gitlab.forge import GitLabForge
from reviewbot.forges.gitlab.post import WritePolicy
from reviewbot.forges.markers import decode
from reviewbot.result import ReviewResult, Stats
from tests.forges.fake_gitlab import FakeGitLab, State
from tests.forges.gitrepo import Repo

TOKEN = "glpat-SECRET-t0ken-1234"
APP_OLD = "".join(f"line {i}\n" for i in range(1, 41))
APP_NEW = APP_OLD.replace("line 5\n", "line 5 changed\nline 5b added\n").replace(
    "line 30\n", "line thirty\n")
MOVED = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(10))
PNG_OLD = b"\x89PNG\r\n\x1a\n\x00\x00\x00one\x00"
PNG_NEW = b"\x89PNG\r\n\x1a\n\x00\x00\x00two\x00\xff"


def scenario(repo: Repo) -> tuple[str, str]:
    """base, head: modify (2 hunks), rename+edit, pure rename, delete, add, binary, CRLF file."""
    repo.write({"src/app.py": APP_OLD, "src/old_name.py": MOVED, "lib/pure.py": "x = 1\n" * 5,
                "docs/removed.md": "gone 1\ngone 2\ngone 3\n", "img/logo.png": PNG_OLD,
                "win.txt": "a\r\nb\r\nc\r\n"})
    base = repo.commit("base")
    repo.checkout("feature", create=True)
    repo.write({"src/app.py": APP_NEW, "docs/removed.md": None, "img/logo.png": PNG_NEW,
                "src/added.py": "import os\n\nprint(os.getcwd())\n", "win.txt": "a\r\nB\r\nc\r\n"})
    repo.move("src/old_name.py", "src/new_name.py")
    repo.write({"src/new_name.py": MOVED.replace("return 4\n", "return 44\n")})
    repo.move("lib/pure.py", "lib/pure2.py")
    head = repo.commit("feature work")
    return base, head


def make_forge(state: State, **policy: float) -> GitLabForge:
    gl = gitlab.Gitlab(state.url, private_token=TOKEN,
                       retry_transient_errors=True, per_page=100)
    return GitLabForge(gl, 42, 7, policy=WritePolicy(backoff=policy.get("backoff", 0.001)))


@dataclass
class Env:
    repo: Repo
    gitlab: State
    base: str
    head: str


@pytest.fixture(name="env")
def env_fixture(tmp_path: Path) -> Iterator[Env]:
    repo = Repo(tmp_path / "repo")
    base, head = scenario(repo)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        yield Env(repo, state, base, head)


def sha_marker(body: str) -> dict[str, str] | None:
    """The summary marker without the carried unanchored findings."""
    meta = decode(body)
    return {k: v for k, v in meta.items() if k != "unanchored"} if meta else None


def finding(path: str, line: int | None, side: Side = Side.NEW, *, end: int | None = None,
            suggestion: str | None = None, title: str = "") -> Finding:
    return Finding(path=path, line=line, side=side, severity=Severity.MAJOR,
                   title=title or f"issue at {path}:{line}:{side.value}",
                   body="Explained.", end_line=end, suggestion=suggestion)


def pick_findings(changes: ChangeSet) -> list[Finding]:
    """Findings on real positions of every kind, plus some that cannot be anchored."""
    out: list[Finding] = []
    for f in changes.files:
        lines = [dl for h in f.hunks for dl in h.lines]
        added = [dl for dl in lines if dl.kind == "+"]
        removed = [dl for dl in lines if dl.kind == "-"]
        context = [dl for dl in lines if dl.kind == " "]
        if added:
            out.append(finding(f.path, added[0].new, title=f"added {added[0].text}"))
        if removed:
            out.append(finding(f.path, removed[0].old, Side.OLD, title=f"removed {removed[0].text}"))
        if context:
            out.append(finding(f.path, context[-1].new, title=f"context {context[-1].text}"))
            out.append(finding(f.path, context[0].old, Side.OLD, title=f"ctx-old {context[0].text}"))
        pairs = [(a, b) for a, b in pairwise(lines) if a.new and b.new and b.new == a.new + 1]
        pairs.sort(key=lambda p: (p[0].kind != "+" or p[1].kind != "+"))  # added lines first
        if pairs:
            a, b = pairs[0]
            out.append(finding(f.path, a.new, end=b.new, suggestion="fixed 1\nfixed 2",
                               title=f"range {a.text}"))
        if f.binary:
            out.append(finding(f.path, 1, title="binary"))
    out.append(finding("src/app.py", 999, title="outside the diff"))
    out.append(finding("src/app.py", None, title="file level"))
    out.append(finding("nowhere.py", 3, title="no such file"))
    return out


def reviewer(changes: ChangeSet, intent: object = None) -> ReviewResult:
    found = pick_findings(changes)
    lines = changes.changed_lines
    stats = Stats(files_total=len(changes.files), files_reviewed=len(changes.files),
                  changed_lines=lines, changed_lines_sent=lines, requests=1)
    return ReviewResult(found, "Looks reasonable overall.", stats, model="tiny-model",
                        base_url="http://127.0.0.1:8000/v1")
