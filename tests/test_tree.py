"""The safe reader of repository files, attacked with hostile repositories built with real git:
no file outside the tree, no link target, no special file and no huge file reaches a prompt, in
any mode (CI or not)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reviewbot.engine.definitions import git_finder
from reviewbot.tree import GitTree, WorkingTree, git_grep, safe_path
from tests.git_support import GitRepo, review_git

CANARY = "CANARY-6b1f0e-not-for-prompts"


def _prompts(seen: list[dict[str, object]]) -> str:
    return "\n".join(str(m["content"]) for body in seen for m in body["messages"])  # type: ignore[attr-defined]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the runner's, outside the repository: what a hostile repository wants read."""
    secret = tmp_path / "runner-secret"
    secret.write_text(f"def leak1(): {CANARY}\n" * 3)
    return secret


def _colon_trap(repo: GitRepo, target: Path) -> None:
    """`vendor/lib:1:def leak1(): #` beside a link `vendor/lib -> target`: split at the first
    `:`, git grep's output names `vendor/lib`, line 1."""
    repo.write("app.py", "def handle(x):\n    return x\n")
    repo.write("vendor/lib:1:def leak1(): #", "def leak1(): # bait\n")
    os.symlink(target, repo.root / "vendor" / "lib")
    repo.commit("base")
    repo.write("app.py", "def handle(x):\n    return leak1(x)\n")
    repo.commit("Call leak1")


@pytest.mark.parametrize("ci", [False, True])
def test_a_file_name_posing_as_grep_output_cannot_read_a_link_target(
        git_repo: GitRepo, outside: Path, ci: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    _colon_trap(git_repo, outside)
    if ci:
        monkeypatch.setenv("GITLAB_CI", "true")
    proc, seen = review_git(git_repo, "HEAD~1..HEAD", "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert seen and CANARY not in _prompts(seen)
    # the real file of that odd name is found, under its real name
    assert "=== vendor/lib:1:def leak1(): # lines 1-1 (definition of leak1" in _prompts(seen)


def test_the_working_tree_side_follows_no_link(git_repo: GitRepo, outside: Path) -> None:
    _colon_trap(git_repo, outside)
    git_repo.write("app.py", "def handle(x):\n    return leak1(x) + 1\n")  # uncommitted
    proc, seen = review_git(git_repo, "HEAD", "--no-verify")
    assert proc.returncode == 0, proc.stderr
    assert seen and CANARY not in _prompts(seen)


@pytest.mark.parametrize("target", ["file", "/proc/self/environ"])
def test_agents_md_as_a_link_is_not_read_outside_ci(
        git_repo: GitRepo, outside: Path, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWBOT_TEST_CANARY", CANARY)  # what /proc/self/environ would show
    for var in ("CI", "GITLAB_CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(var, raising=False)
    git_repo.write("app.py", "x = 1\n")
    os.symlink(outside if target == "file" else target, git_repo.root / "AGENTS.md")
    git_repo.commit("base")  # the link is committed: the target side has it too
    git_repo.write("app.py", "x = 2\n")
    git_repo.commit("change")
    for range_ in ("HEAD~1..HEAD", "HEAD~1"):  # from the target revision, from the working tree
        proc, seen = review_git(git_repo, range_, "--no-verify")
        assert proc.returncode == 0, proc.stderr
        assert seen and CANARY not in _prompts(seen)


def test_a_changed_file_linked_to_dev_zero_is_refused_quickly(git_repo: GitRepo) -> None:
    git_repo.write("a.py", "def f():\n    return 1\n")
    git_repo.commit("base")
    (git_repo.root / "a.py").unlink()
    os.symlink("/dev/zero", git_repo.root / "a.py")
    started = time.monotonic()
    proc, _ = review_git(git_repo, "HEAD", "--no-verify")
    assert proc.returncode in (0, 3), proc.stderr
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    assert time.monotonic() - started < 60


# --- the reader itself -------------------------------------------------------------------------

def test_working_tree_refuses_links_special_files_escapes_and_huge_files(tmp_path: Path,
                                                                          outside: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "ok.py").write_text("fine\n")
    os.symlink(outside, root / "link.py")
    os.symlink(root / "src", root / "dirlink")  # a link as a directory component
    os.mkfifo(root / "fifo")
    (root / "big.py").write_bytes(b"x" * 101)
    tree = WorkingTree(str(root), max_bytes=100)
    assert tree.read("src/ok.py") == "fine\n"
    started = time.monotonic()
    for path in ("link.py", "dirlink/ok.py", "fifo", "big.py", "../repo/src/ok.py",
                 "/etc/passwd", "src//ok.py", "./src/ok.py", "src", "missing.py", ""):
        assert tree.read(path) is None, path
    assert time.monotonic() - started < 5  # the FIFO did not block


def test_git_tree_reads_blobs_only(git_repo: GitRepo, outside: Path) -> None:
    git_repo.write("ok.py", "fine\n")
    git_repo.write("odd:1:name.py", "odd\n")
    git_repo.write("big.py", "y" * 200)
    os.symlink(outside, git_repo.root / "link.py")
    git_repo.commit("base")
    tree = GitTree("HEAD", str(git_repo.root), max_bytes=100)
    assert tree.read("ok.py") == "fine\n"
    assert tree.read("odd:1:name.py") == "odd\n"
    for path in ("link.py", "big.py", "missing.py", "../ok.py", "."):
        assert tree.read(path) is None, path
    assert GitTree("--output=/tmp/x", str(git_repo.root)).read("ok.py") is None


def test_grep_names_come_whole(git_repo: GitRepo) -> None:
    git_repo.write("a:7:def x.py", "def target():\n    pass\n")
    git_repo.write("new\nline.py", "def target():\n    pass\n")
    git_repo.commit("base")
    hits = sorted(git_grep([r"def target\b"], "HEAD", str(git_repo.root)))
    assert hits == [("a:7:def x.py", 1, "def target():"), ("new\nline.py", 1, "def target():")]
    found = git_finder("HEAD", str(git_repo.root))(
        ["target"], lambda p: GitTree("HEAD", str(git_repo.root)).read(p).split("\n"))  # type: ignore[union-attr]
    assert sorted(d.path for d in found) == ["a:7:def x.py", "new\nline.py"]


@pytest.mark.parametrize("path,ok", [("a/b.py", True), ("a", True), ("a/../b", False),
                                     ("/a", False), ("a//b", False), ("a/./b", False),
                                     ("a\0b", False), ("", False), ("a\\..\\b", False)])
def test_safe_path(path: str, ok: bool) -> None:
    assert safe_path(path) is ok
