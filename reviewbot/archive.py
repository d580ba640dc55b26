"""A forge's archive of a commit, downloaded with a bound and unpacked safely, cached per SHA.

The archive is as untrusted as the repository it packs (and the server that sent it). Only
regular files reach the disk, each written fresh (O_EXCL, O_NOFOLLOW) under a new directory:
- the one top-level directory both forges put first (`project-<sha>/`) is dropped;
- a name that is absolute, has an empty, `.` or `..` segment, a `.git` segment, a backslash or
  a NUL is refused (reviewbot.tree.safe_path), and so is every symlink, hard link, device, FIFO
  and sparse entry; a name the file system cannot hold (deeper than PATH_MAX) is skipped;
- the download and the unpacked members are both bounded by `max_bytes`, every member counted
  whether it is written or skipped (a gzip bomb of skipped members stops at the bound too), and
  both by a wall-clock deadline; a file over reviewbot.tree's MAX_FILE_BYTES is left out, and
  so is any member past MAX_MEMBERS;
- the cache unpacks into a temporary directory and renames it into place, so a reader never
  sees half an archive; it drops the least recently used trees beyond its size, but never one
  used in the last `min_idle_s` (a running review may read it); a commit whose archive was over
  the bound is remembered (a small marker), not downloaded again; what a killed fill left
  behind is removed when a cache is opened.
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import tarfile
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, BinaryIO

from reviewbot.tree import MAX_FILE_BYTES, safe_path

MAX_MEMBERS = 200_000
_DONE = ".reviewbot-complete"  # written last, holding the unpacked size: the tree is whole
_LEFTOVERS = (".fill-", ".evict-")  # a fill's or an eviction's work, if its process was killed
_STALE_S = 6 * 3600  # no fill runs this long (review_timeout bounds it): its leftovers are dead


class ArchiveTooLarge(Exception):
    """The archive (packed or unpacked) is larger than the bound."""


class ArchiveTooSlow(Exception):
    """Downloading or unpacking the archive passed its deadline."""


def copy_bounded(chunks: Iterable[bytes], out: BinaryIO, max_bytes: int,
                 deadline: float = math.inf) -> int:
    """Write `chunks` to `out`; ArchiveTooLarge as soon as more than `max_bytes` came,
    ArchiveTooSlow once `deadline` (time.monotonic) has passed."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise ArchiveTooLarge(f"the archive is larger than {max_bytes // 2**20} MB")
        _check(deadline, "downloading")
        out.write(chunk)
    return total


def unpack(archive: str | Path, dest: Path, max_bytes: int, deadline: float = math.inf) -> int:
    """Unpack the .tar.gz at `archive` into the new directory `dest`: regular files only, with
    safe names (see the module's doc). Returns the bytes unpacked; ArchiveTooLarge beyond
    `max_bytes`, ArchiveTooSlow past `deadline`; tarfile.TarError for a broken archive."""
    dest.mkdir(parents=True)
    try:
        return _unpack(archive, dest, max_bytes, deadline)
    except (EOFError, zlib.error) as exc:  # cut short or corrupt: as broken as a bad header
        raise tarfile.ReadError(f"broken archive: {exc}") from None


def _unpack(archive: str | Path, dest: Path, max_bytes: int, deadline: float) -> int:
    unpacked = 0
    with tarfile.open(archive, mode="r:gz") as tar:
        for count, member in enumerate(tar):
            if count >= MAX_MEMBERS:
                break
            # every member is decompressed to reach the next one, written or not: all count
            unpacked += max(member.size, 0)
            if unpacked > max_bytes:
                raise ArchiveTooLarge(f"the archive unpacks to more than {max_bytes // 2**20} MB")
            _check(deadline, "unpacking")
            name = _inner_name(member.name)
            if name is None or not member.isreg() or member.size > MAX_FILE_BYTES:
                continue
            source = tar.extractfile(member)
            if source is not None:
                _write(dest, name, source)
    return unpacked


def _check(deadline: float, doing: str) -> None:
    if time.monotonic() > deadline:
        raise ArchiveTooSlow(f"{doing} the repository archive took too long")


def _inner_name(name: str) -> str | None:
    """The member's path below the archive's top directory, or None when it is not safe (or
    inside a `.git` directory: a planted repository's config must never reach git)."""
    top, sep, rest = name.partition("/")
    if not (sep and top and top not in (".", "..") and safe_path(rest)):
        return None
    return None if any(part.casefold() == ".git" for part in rest.split("/")) else rest


def _write(dest: Path, name: str, source: IO[bytes]) -> None:
    """One member written fresh; skipped when the name cannot be made (deeper than PATH_MAX,
    a second member of the same name, a file where a directory is)."""
    *dirs, _ = name.split("/")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        dest.joinpath(*dirs).mkdir(parents=True, exist_ok=True)  # a fresh dest holds no links
        fd = os.open(dest / name, flags, 0o644)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):
        return
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return
        raise
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out)


Fill = Callable[[BinaryIO], None]  # writes the archive (.tar.gz) to the file it is given


class ArchiveCache:
    """Unpacked trees under `root`, one directory per commit SHA, at most `max_bytes` in all
    (the least recently used go first). Safe for the listener's threads and processes: a tree
    appears by one rename, and two fills of one SHA leave one tree."""

    def __init__(self, root: str | Path, max_bytes: int, min_idle_s: float = 3600.0) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.min_idle_s = min_idle_s  # a tree used more recently is never evicted
        self._lock = threading.Lock()
        self._clean_leftovers()

    def _clean_leftovers(self) -> None:
        """Remove what fills and evictions of killed processes left (old enough that no live
        one can still be writing it)."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            try:
                stale = time.time() - entry.lstat().st_mtime > _STALE_S
            except OSError:
                continue
            if entry.name.startswith(_LEFTOVERS) and stale:
                shutil.rmtree(entry, ignore_errors=True)

    def tree(self, sha: str, fill: Fill, max_bytes: int, deadline: float = math.inf) -> Path:
        """The directory holding commit `sha`'s files, downloaded through `fill` when the
        cache lacks it. ArchiveTooLarge when it is over `max_bytes` (nothing is kept),
        ArchiveTooSlow when the unpacking passes `deadline`."""
        if not sha.isalnum():
            raise ValueError("not a commit SHA")
        done = self.root / sha / _DONE
        if done.is_file():
            os.utime(done)  # recently used
            return self.root / sha
        too_large = self.root / f".too-large-{sha}"  # holds the bound it was over
        if _size(too_large) >= max_bytes:  # the listener's next review of this head: no download
            raise ArchiveTooLarge(f"the archive is larger than {max_bytes // 2**20} MB")
        self.root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.root, prefix=".fill-") as work:
            packed = Path(work) / "archive.tar.gz"
            try:
                with packed.open("wb") as out:
                    fill(out)
                unpacked = Path(work) / "tree"
                size = unpack(packed, unpacked, max_bytes, deadline)
            except ArchiveTooLarge:
                too_large.write_text(str(max_bytes))
                raise
            (unpacked / _DONE).write_text(str(size))
            try:
                os.rename(unpacked, self.root / sha)
            except OSError:  # another fill won the race: its tree is as good
                pass
        self._evict(keep=sha)
        return self.root / sha

    def _evict(self, keep: str) -> None:
        with self._lock:
            trees = []
            for entry in self.root.iterdir():
                done = entry / _DONE
                if entry.name != keep and done.is_file():
                    trees.append((done.stat().st_mtime, _size(done), entry))
            total = sum(size for _, size, _ in trees) + _size(self.root / keep / _DONE)
            idle_since = time.time() - self.min_idle_s
            for used, size, entry in sorted(trees, key=lambda t: t[0]):
                if total <= self.max_bytes or used > idle_since:  # in use: over size a while
                    break
                # renamed first: a reader has either the whole tree or none of it
                doomed = self.root / f".evict-{entry.name}-{time.monotonic_ns()}"
                try:
                    os.rename(entry, doomed)
                except OSError:
                    continue
                shutil.rmtree(doomed, ignore_errors=True)
                total -= size


def _size(done: Path) -> int:
    try:
        return int(done.read_text())
    except (OSError, ValueError):
        return 0
