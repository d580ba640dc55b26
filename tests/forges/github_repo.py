"""A real git repository in a temp dir for the fake GitHub, and an independent diff reader.

The fake validates comment positions with its own small parser (not `reviewbot.diff`), so a bug
in the code under test cannot hide behind the same bug in the emulator.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
}


class GitRepo:
    """A throwaway repository: write files, commit, diff."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, **_ENV}
        proc = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=self.path,
                              capture_output=True, env=env, check=True, timeout=60)
        return proc.stdout.decode("utf-8", "replace")

    def write(self, rel: str, content: str | bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", rel)

    def move(self, src: str, dst: str) -> None:
        (self.path / dst).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", src, dst)

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()

    def diff(self, base: str, head: str) -> str:
        """What GitHub's `.diff` media type returns: renames found, binary files not inlined."""
        return self.git("diff", "--no-color", "--no-ext-diff", "-M", f"{base}...{head}")

    def show(self, ref: str, rel: str) -> str | None:
        """A file's text at `ref`, or None when it is not there."""
        try:
            return self.git("show", f"{ref}:{rel}")
        except subprocess.CalledProcessError:
            return None

    def is_ancestor(self, a: str, b: str) -> bool:
        env = {**os.environ, **_ENV}
        proc = subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=self.path,
                              env=env, capture_output=True, timeout=60, check=False)
        return proc.returncode == 0

    def archive(self, rev: str, prefix: str) -> bytes:
        """`git archive` of `rev` as .tar.gz, every path under `prefix` (as codeload sends)."""
        out = subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix={prefix}", rev],
                             cwd=self.path, capture_output=True, check=True, timeout=60)
        return out.stdout

    def has_commit(self, sha: str) -> bool:
        env = {**os.environ, **_ENV}
        proc = subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=self.path,
                              env=env, capture_output=True, timeout=60, check=False)
        return proc.returncode == 0


@dataclass
class PatchFile:
    """One file of a diff, as GitHub's /files endpoint describes it."""

    filename: str
    previous_filename: str | None
    status: str  # added | removed | modified | renamed
    patch: str | None  # from the first "@@", no trailing newline; None for binary files
    hunks: list[set[tuple[str, int]]] = field(default_factory=list)  # ("RIGHT"|"LEFT", line)
    additions: int = 0
    deletions: int = 0

    def hunk_index(self, side: str, line: int) -> int | None:
        for i, hunk in enumerate(self.hunks):
            if (side, line) in hunk:
                return i
        return None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "sha": "0" * 40, "filename": self.filename, "status": self.status,
            "additions": self.additions, "deletions": self.deletions,
            "changes": self.additions + self.deletions,
        }
        if self.previous_filename is not None:
            out["previous_filename"] = self.previous_filename
        if self.patch is not None:
            out["patch"] = self.patch
        return out


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def split_files(diff: str) -> list[PatchFile]:
    """Read `git diff` output (split on "\\n" only) into per-file records with their hunks."""
    chunks: list[list[str]] = []
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            chunks.append([])
        if chunks:
            chunks[-1].append(line)
    return [_file(chunk) for chunk in chunks]


def _file(lines: list[str]) -> PatchFile:
    head = lines[0][len("diff --git "):]
    half = len(head) // 2  # "a/P b/P" for the same path P
    old, new = head[2:half], head[half + 3:]
    status = "modified"
    start = next((i for i, ln in enumerate(lines) if ln.startswith("@@")), None)
    for ln in lines[: start if start is not None else len(lines)]:
        if ln.startswith("new file mode"):
            status = "added"
        elif ln.startswith("deleted file mode"):
            status = "removed"
        elif ln.startswith("rename from "):
            old, status = ln[len("rename from "):], "renamed"
        elif ln.startswith("rename to "):
            new = ln[len("rename to "):]
    binary = any(ln.startswith("Binary files ") for ln in lines)
    body = lines[start:] if start is not None else []
    while body and body[-1] == "":
        body.pop()
    pf = PatchFile(filename=new if status != "removed" else old,
                   previous_filename=old if status == "renamed" else None,
                   status=status, patch=None if binary or start is None else "\n".join(body))
    if binary and status == "modified" and old != new:
        pf.status = "renamed"
    _count(pf, body)
    return pf


def _count(pf: PatchFile, body: list[str]) -> None:
    old = new = 0
    for ln in body:
        m = _HUNK.match(ln)
        if m:
            old, new = int(m.group(1)), int(m.group(3))
            pf.hunks.append(set())
        elif ln.startswith("+"):
            pf.hunks[-1].add(("RIGHT", new))
            new, pf.additions = new + 1, pf.additions + 1
        elif ln.startswith("-"):
            pf.hunks[-1].add(("LEFT", old))
            old, pf.deletions = old + 1, pf.deletions + 1
        elif ln.startswith(" "):
            pf.hunks[-1].update({("RIGHT", new), ("LEFT", old)})
            old, new = old + 1, new + 1
