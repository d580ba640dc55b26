"""The repository at a change's head commit, for every source: the one answer to "give me the
repository at this commit" that the code around each hunk and the definitions come from.

- `--git`: the local repository at the range's right side (or the working tree);
- `--mr`/`--pr` where a local clone holds the head commit (a CI job: GitHub Actions checks out
  the merge commit, but the head is in the clone; `git cat-file -e` says so), that commit of the
  clone, whatever is checked out. A shallow clone that lacks it fetches it once when its
  remote allows;
- otherwise (the listener, a laptop outside the clone) the forge's archive of the head SHA,
  bounded by `max_archive_mb` and unpacked safely (reviewbot.archive) into a per-SHA cache;
- and when there is no archive (too large, refused, an old forge), the forge's files one by one
  for the code around hunks, without definitions: the summary says why.

Whatever the source, every file is read through reviewbot.tree's safe readers.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from reviewbot.archive import ArchiveCache, ArchiveTooLarge, ArchiveTooSlow
from reviewbot.config import Settings
from reviewbot.context import Finder, HeadFiles
from reviewbot.engine.definitions import git_finder
from reviewbot.errors import ForgeError
from reviewbot.forges.base import ArchiveReader, FileReader, Forge
from reviewbot.tree import GIT_TIMEOUT, MAX_FILE_BYTES, GitTree, WorkingTree

log = logging.getLogger(__name__)
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
FETCH_TIMEOUT = 120


@dataclass(frozen=True)
class HeadTree:
    files: HeadFiles | None = None
    definitions: Finder | None = None
    source: str = "none"  # clone | working tree | archive | forge files | none
    note: str = ""  # for the summary: why definitions are missing


def at_revision(rev: str | None, cwd: str | None = None) -> HeadTree:
    """A revision of a local repository (None: its working tree)."""
    if rev:
        return HeadTree(GitTree(rev, cwd).read, git_finder(rev, cwd), "clone")
    return HeadTree(WorkingTree(cwd or ".").read, git_finder(None, cwd), "working tree")


NO_GIT = "no definitions from other files: git is not installed here (they are found with git grep)"


def in_directory(root: Path) -> HeadTree:
    """An unpacked archive: its files, and definitions by `git grep --no-index` over them
    (without git, the files alone, and the summary says why)."""
    if shutil.which("git") is None:
        return HeadTree(WorkingTree(str(root)).read, None, "archive", NO_GIT)
    return HeadTree(WorkingTree(str(root)).read, git_finder(None, str(root), no_index=True),
                    "archive")


@dataclass(frozen=True)
class Trees:
    """Where a merge/pull request's head tree comes from (see the module's doc)."""

    cache: ArchiveCache | None  # None: no archive is downloaded
    max_archive_bytes: int
    cwd: str | None = None  # the local clone to look in (None: the current directory)
    fetch: bool = True  # fetch a head commit a shallow clone lacks
    seconds: float = math.inf  # for downloading and unpacking an archive (part of the review's)

    @classmethod
    def from_settings(cls, settings: Settings) -> Trees:
        root = settings.tree_cache or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "reviewbot", "trees")
        max_bytes = int(settings.max_archive_mb * 2**20)
        # a tree used within one review's time may still be read: never evicted before
        cache = ArchiveCache(root, int(settings.tree_cache_mb * 2**20),
                             min_idle_s=settings.review_timeout) if max_bytes else None
        return cls(cache, max_bytes, seconds=settings.review_timeout / 4)

    def at(self, forge: Forge, sha: str) -> HeadTree:
        if not _SHA.fullmatch(sha or ""):
            return HeadTree()
        if has_commit(sha, self.cwd) or (self.fetch and fetch_commit(sha, self.cwd)):
            return at_revision(sha, self.cwd)
        note = ""
        if isinstance(forge, ArchiveReader) and self.cache is not None:
            started = time.monotonic()
            deadline = started + self.seconds
            try:
                root = self.cache.tree(
                    sha, lambda out: forge.archive(sha, out, self.max_archive_bytes, deadline),
                    self.max_archive_bytes, deadline)
                log.info("the repository at %s from the forge's archive in %.1f s", sha[:12],
                         time.monotonic() - started)
                return in_directory(root)
            except ArchiveTooLarge as exc:
                note = (f"no definitions from other files: {exc} (max_archive_mb "
                        f"{self.max_archive_bytes / 2**20:g}), and no local clone holds the head")
            except ArchiveTooSlow as exc:
                note = (f"no definitions from other files: {exc} (over "
                        f"{time.monotonic() - started:.0f} s, a quarter of review_timeout)")
            except (ForgeError, tarfile.TarError, OSError) as exc:
                log.warning("the repository archive at %s could not be used: %s", sha[:12], exc)
                note = "no definitions from other files: the repository archive could not be read"
        return HeadTree(forge_files(forge, sha), None, "forge files", note)


def _git(argv: list[str], cwd: str | None, timeout: float = GIT_TIMEOUT) -> str | None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never wait for a password
    try:
        proc = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, check=False,
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def has_commit(sha: str, cwd: str | None = None) -> bool:
    """The repository at `cwd` (if any) holds commit `sha` itself, not only its name."""
    return _git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd) is not None


def fetch_commit(sha: str, cwd: str | None = None) -> bool:
    """In a shallow clone (a CI checkout), fetch `sha` from origin; True when it arrived."""
    if (_git(["rev-parse", "--is-shallow-repository"], cwd) or "").strip() != "true":
        return False
    if _git(["fetch", "--quiet", "--no-tags", "--depth=1", "origin", sha], cwd,
            FETCH_TIMEOUT) is None:
        return False
    return has_commit(sha, cwd)


def forge_files(forge: Forge, sha: str) -> ForgeFiles | None:
    """The forge's files at `sha`, one request each, for the code around each hunk."""
    if not isinstance(forge, FileReader) or not sha:
        return None
    return ForgeFiles(forge, sha)


class ForgeFiles:
    """A file that cannot be read is not shown (the diff is reviewed all the same) and is
    remembered, so that the report's notes name it (reviewbot.context.PartialFiles)."""

    def __init__(self, forge: FileReader, sha: str) -> None:
        self.forge, self.sha = forge, sha
        self._unread: dict[str, None] = {}  # ordered, once each

    def __call__(self, path: str) -> str | None:
        try:
            text = self.forge.file_at(path, self.sha)
        except ForgeError as exc:
            log.warning("not showing the code around %s: %s", path, exc)
            self._unread[path] = None
            return None
        # the forge's answer is untrusted as the tree is: the same cap as reviewbot.tree
        if text is not None and len(text) > MAX_FILE_BYTES:
            self._unread[path] = None
            return None
        return text

    def unread(self) -> list[str]:
        return list(self._unread)
