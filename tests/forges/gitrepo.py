"""A real git repository in a temp dir, and its diffs cut into GitLab-style per-file objects.

Used by the fake GitLab so that every position is validated against a real `git diff`.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
}


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        out = subprocess.run(["git", "-c", "core.quotePath=false", *args], cwd=self.root,
                             env=_ENV, capture_output=True, check=True, timeout=60)
        return out.stdout.decode("utf-8", "replace")

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write (str/bytes), or delete (None), files."""
        for path, content in files.items():
            p = self.root / path
            if content is None:
                self.git("rm", "-q", path)
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_bytes(content.encode("utf-8"))
            self.git("add", path)

    def move(self, old: str, new: str) -> None:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def commit(self, message: str) -> str:
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def archive(self, rev: str, prefix: str) -> bytes:
        """`git archive` of `rev` as .tar.gz, every path under `prefix` (as the forges send)."""
        out = subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix={prefix}", rev],
                             cwd=self.root, env=_ENV, capture_output=True, check=True, timeout=60)
        return out.stdout

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def checkout(self, branch: str, create: bool = False) -> None:
        self.git("checkout", "-q", *(["-b"] if create else []), branch)

    def rev_list(self, base: str, head: str) -> list[str]:
        return self.git("rev-list", f"{base}..{head}").split()

    def raw_diff(self, base: str, head: str, exclude: tuple[str, ...] = ()) -> str:
        spec = ["--", ".", *(f":(exclude){p}" for p in exclude)] if exclude else []
        return self.git("diff", "-M", "--no-color", base, head, *spec)

    def file_diffs(self, base: str, head: str) -> list[dict[str, object]]:
        """GitLab `/diffs` objects for base..head (renames detected, binary as GitLab shows it)."""
        status = self.git("diff", "-M", "--name-status", "-z", base, head).split("\0")
        chunks = re.split(r"(?m)^diff --git ", self.raw_diff(base, head))[1:]
        entries = []
        i = 0
        while i < len(status) and status[i]:
            code = status[i]
            if code.startswith(("R", "C")):
                old, new = status[i + 1], status[i + 2]
                i += 3
            else:
                old = new = status[i + 1]
                i += 2
            entries.append((code[0], old, new))
        assert len(entries) == len(chunks), (entries, len(chunks))
        return [_api_object(code, old, new, chunk) for (code, old, new), chunk in zip(entries, chunks)]


def _api_object(code: str, old: str, new: str, chunk: str) -> dict[str, object]:
    at = chunk.find("\n@@")
    head, diff = (chunk[:at], chunk[at + 1:]) if at >= 0 else (chunk, "")
    binary = re.search(r"(?m)^Binary files .* differ$", head)
    if binary:
        diff = f"Binary files a/{old} and b/{new} differ\n"
    modes = re.findall(r"(?m)^(?:old|new|new file|deleted file) mode (\d+)$", head)
    return {
        "old_path": old, "new_path": new,
        "a_mode": "0" if code == "A" else (modes[0] if modes else "100644"),
        "b_mode": "0" if code == "D" else (modes[-1] if modes else "100644"),
        "new_file": code == "A", "renamed_file": code == "R", "deleted_file": code == "D",
        "generated_file": False, "too_large": False, "collapsed": False,
        "diff": diff,
    }


@dataclass(frozen=True)
class Line:
    kind: str
    old: int | None
    new: int | None
    code_old: int  # GitLab's running counters (what line_code uses)
    code_new: int


def diff_lines(diff: str) -> list[Line]:
    """Every line of a per-file diff, numbered the way GitLab's diff parser does."""
    out: list[Line] = []
    old = new = 0
    for raw in diff.split("\n"):
        m = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            continue
        if not raw or raw[0] not in "+- ":
            continue
        kind = raw[0]
        out.append(Line(kind, old if kind != "+" else None, new if kind != "-" else None, old, new))
        if kind in "+ ":
            new += 1
        if kind in "- ":
            old += 1
    return out
