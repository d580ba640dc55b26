"""A forge's archive of a commit, downloaded with a bound and unpacked safely, cached per SHA.

The archive is as untrusted as the repository it packs (and the server that sent it). Only
regular files reach the disk, each written fresh (O_EXCL, O_NOFOLLOW) under a new directory:
- the one top-level directory both forges put first (`project-<sha>/`) is dropped;
- a name that is absolute, has an empty, `.` or `..` segment, a backslash or a NUL is refused
  (reviewbot.tree.safe_path), and so is every symlink, hard link, device, FIFO and sparse entry;
- the download and the unpacked files are both bounded by `max_bytes` (a gzip bomb stops at the
  bound), a file over reviewbot.tree's MAX_FILE_BYTES is left out, and so is any member past
  MAX_MEMBERS;
- the cache unpacks into a temporary directory and renames it into place, so a reader never
  sees half an archive, and it drops the least recently used trees beyond its size; a commit
  whose archive was over the bound is remembered (a small marker), not downloaded again.
"""

from __future__ import annotations

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


class ArchiveTooLarge(Exception):
    """The archive (packed or unpacked) is larger than the bound."""


def copy_bounded(chunks: Iterable[bytes], out: BinaryIO, max_bytes: int) -> int:
    """Write `chunks` to `out`; ArchiveTooLarge as soon as more than `max_bytes` came."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > max_bytes:
            raise ArchiveTooLarge(f"the archive is larger than {max_bytes // 2**20} MB")
        out.write(chunk)
    return total


def unpack(archive: str | Path, dest: Path, max_bytes: int) -> int:
    """Unpack the .tar.gz at `archive` into the new directory `dest`: regular files only, with
    safe names (see the module's doc). Returns the bytes written; ArchiveTooLarge beyond
    `max_bytes`; tarfile.TarError for a broken archive."""
    dest.mkdir(parents=True)
    try:
        return _unpack(archive, dest, max_bytes)
    except (EOFError, zlib.error) as exc:  # cut short or corrupt: as broken as a bad header
        raise tarfile.ReadError(f"broken archive: {exc}") from None


def _unpack(archive: str | Path, dest: Path, max_bytes: int) -> int:
    written = 0
    with tarfile.open(archive, mode="r:gz") as tar:
        for count, member in enumerate(tar):
            if count >= MAX_MEMBERS:
                break
            name = _inner_name(member.name)
            if name is None or not member.isreg() or member.size > MAX_FILE_BYTES:
                continue
            written += member.size
            if written > max_bytes:
                raise ArchiveTooLarge(f"the archive unpacks to more than {max_bytes // 2**20} MB")
            source = tar.extractfile(member)
            if source is not None:
                _write(dest, name, source)
    return written


def _inner_name(name: str) -> str | None:
    """The member's path below the archive's top directory, or None when it is not safe."""
    top, sep, rest = name.partition("/")
    return rest if sep and top and top not in (".", "..") and safe_path(rest) else None


def _write(dest: Path, name: str, source: IO[bytes]) -> None:
    *dirs, _ = name.split("/")
    parent = dest.joinpath(*dirs)
    parent.mkdir(parents=True, exist_ok=True)  # under a fresh dest holding no links
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(dest / name, flags, 0o644)
    except OSError:  # a second member of the same name, or a file where a directory is
        return
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out)


Fill = Callable[[BinaryIO], None]  # writes the archive (.tar.gz) to the file it is given


class ArchiveCache:
    """Unpacked trees under `root`, one directory per commit SHA, at most `max_bytes` in all
    (the least recently used go first). Safe for the listener's threads and processes: a tree
    appears by one rename, and two fills of one SHA leave one tree."""

    def __init__(self, root: str | Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def tree(self, sha: str, fill: Fill, max_bytes: int) -> Path:
        """The directory holding commit `sha`'s files, downloaded through `fill` when the
        cache lacks it. ArchiveTooLarge when it is over `max_bytes` (nothing is kept)."""
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
                size = unpack(packed, unpacked, max_bytes)
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
            for _, size, entry in sorted(trees, key=lambda t: t[0]):
                if total <= self.max_bytes:
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
