"""The one reader of repository files: rules files, the code around hunks, definitions.

A repository is untrusted in every mode (CI or not): a committed symlink, a file name with a
`:` or a newline, a FIFO or a huge file must never make the bot read something outside the
tree, block, or run out of memory. Every consumer reads through a `Tree`:
- paths are relative, with no empty, `.` or `..` segment;
- a symlink is refused, in the working tree (every component is opened with O_NOFOLLOW, so a
  link swapped in between a check and the read is refused too) and at a revision (mode 120000);
- only regular files (a blob at a revision) are read; devices, FIFOs, sockets and submodules
  are refused;
- a file larger than `MAX_FILE_BYTES` is refused before it is read;
- names come from git as NUL-terminated fields (`-z`), never split on `:`.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterator
from typing import Protocol

from reviewbot.git import is_revision

MAX_FILE_BYTES = 2 * 1024 * 1024  # a source file the model may see a part of
GIT_TIMEOUT = 60


def safe_path(path: str) -> bool:
    """A path inside a tree: relative, no empty, `.` or `..` segment, no NUL."""
    if not path or path.startswith("/") or "\0" in path or "\\" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


class Tree(Protocol):
    def read(self, path: str) -> str | None:
        """The text of the regular file at `path`, or None (absent, refused or too large)."""
        ...


class WorkingTree:
    """Files on disk under `root`, read without following any symlink."""

    def __init__(self, root: str = ".", max_bytes: int = MAX_FILE_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def read(self, path: str) -> str | None:
        data = self.read_bytes(path)
        return None if data is None else data.decode("utf-8", "replace")

    def read_bytes(self, path: str) -> bytes | None:
        if not safe_path(path):
            return None
        flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            *dirs, name = path.split("/")
            for part in dirs:  # each directory opened relative to the last: no link followed
                next_fd = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below)
            file_fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=fd)
        except OSError:  # absent, a link (ELOOP, ENOTDIR), unreadable: not shown
            return None
        finally:
            os.close(fd)
        try:
            info = os.fstat(file_fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
                return None
            with os.fdopen(file_fd, "rb", closefd=False) as handle:
                data = handle.read(self.max_bytes + 1)
            return data if len(data) <= self.max_bytes else None
        finally:
            os.close(file_fd)


class GitTree:
    """Files as revision `rev` of the repository at `cwd` stores them: blobs only."""

    def __init__(self, rev: str, cwd: str | None = None,
                 max_bytes: int = MAX_FILE_BYTES) -> None:
        self.rev = rev
        self.cwd = cwd
        self.max_bytes = max_bytes

    def _git(self, *argv: str) -> bytes | None:
        try:
            proc = subprocess.run(["git", *argv], cwd=self.cwd, capture_output=True,
                                  check=False, timeout=GIT_TIMEOUT)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return None
        return proc.stdout if proc.returncode == 0 else None

    def read(self, path: str) -> str | None:
        if not safe_path(path) or not is_revision(self.rev):
            return None
        # `<mode> <type> <oid> <size>\t<path>\0`: the entry's kind and size before any read
        listing = self._git("ls-tree", "-z", "-l", "--full-tree", self.rev, "--", path)
        if not listing:
            return None
        head, _, name = listing.rstrip(b"\0").partition(b"\t")
        fields = head.split()
        if name.decode("utf-8", "surrogateescape") != path or len(fields) != 4 \
                or fields[0] not in (b"100644", b"100755") or fields[1] != b"blob" \
                or not fields[3].isdigit() or int(fields[3]) > self.max_bytes:
            return None
        data = self._git("cat-file", "blob", fields[2].decode("ascii"))
        return None if data is None else data.decode("utf-8", "replace")


# `git grep -z -n`: NAME\0LINE\0TEXT\n, where NAME may hold any byte but NUL
_GREP_HIT = re.compile(rb"([^\0]*)\0(\d+)\0([^\n]*)\n")


def git_grep(patterns: list[str], rev: str | None, cwd: str | None = None,
             no_index: bool = False) -> Iterator[tuple[str, int, str]]:
    """(path, line, text) of every line matching one of `patterns` (extended regexps) in the
    tracked files at `rev` (None: the working tree), or with `no_index` in every file under
    `cwd` (an unpacked archive). Nothing when git fails."""
    if not patterns or (rev is not None and (no_index or not is_revision(rev))):
        return
    argv = ["git", "grep", "-z", "-n", "-I", "-E", "--no-color", "--no-textconv",
            *(["--no-index"] if no_index else [])]
    for pattern in patterns:
        argv += ["-e", pattern]
    argv += [*([rev] if rev else []), "--"]  # no --end-of-options in git 2.39: rev is checked
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, check=False,
                              timeout=GIT_TIMEOUT)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return
    prefix = f"{rev}:".encode() if rev else b""
    for m in _GREP_HIT.finditer(proc.stdout):
        name = m.group(1)
        if not name.startswith(prefix):
            continue
        path = name[len(prefix):].decode("utf-8", "surrogateescape")
        yield path, int(m.group(2)), m.group(3).decode("utf-8", "replace")
