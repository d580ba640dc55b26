"""A forge's archive is untrusted: hostile members never leave the tree, bombs stop at the bound,
the per-SHA cache holds whole trees only and stays within its size."""

from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from reviewbot.archive import ArchiveCache, ArchiveTooLarge, ArchiveTooSlow, copy_bounded, unpack
from reviewbot.tree import WorkingTree

SHA = "a" * 40


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_only_regular_files_with_safe_names_reach_the_disk(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = _tar(tmp_path / "a.tar.gz", [
        (_member("top/src/ok.py"), b"def ok():\n    return 1\n"),
        (_member("/etc/absolute"), b"x"),
        (_member("top/../../escape.txt"), b"x"),
        (_member("top/./dot.txt"), b"x"),
        (_member("top/back\\slash.txt"), b"x"),
        (_member("top/link", tarfile.SYMTYPE, str(outside)), None),
        (_member("top/link/planted.txt"), b"into the link's target?"),
        (_member("top/hard", tarfile.LNKTYPE, "/etc/passwd"), None),
        (_member("top/dev", tarfile.CHRTYPE), None),
        (_member("top/fifo", tarfile.FIFOTYPE), None),
        (_member("top/src/ok.py"), b"a second member of the same name"),
        (_member("no-top-dir.txt"), b"x"),
    ])
    dest = tmp_path / "tree"
    unpack(archive, dest, 2**20)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["link/planted.txt", "src/ok.py"]  # `link` is a plain directory here
    assert not any(p.is_symlink() for p in dest.rglob("*"))
    assert list(outside.iterdir()) == [] and not (tmp_path / "escape.txt").exists()
    assert WorkingTree(str(dest)).read("src/ok.py") == "def ok():\n    return 1\n"  # first kept


def test_a_gzip_bomb_stops_at_the_bound(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bomb.tar.gz", [(_member(f"top/zeros{i}"), b"\0" * 2**20)
                                              for i in range(8)])
    assert archive.stat().st_size < 100_000  # small packed, 8 MB unpacked
    with pytest.raises(ArchiveTooLarge):
        unpack(archive, tmp_path / "tree", 3 * 2**20)


def test_a_download_stops_at_the_bound() -> None:
    out = io.BytesIO()
    with pytest.raises(ArchiveTooLarge):
        copy_bounded(iter([b"x" * 1000] * 10), out, 5000)
    assert len(out.getvalue()) <= 5000


def _fill(files: dict[str, bytes]):  # type: ignore[no-untyped-def]
    def fill(out: io.BufferedWriter) -> None:
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(f"repo-sha/{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return fill


def test_the_cache_keeps_whole_trees_within_its_size(tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "cache", max_bytes=150_000)
    first = cache.tree("1" * 40, _fill({"a.txt": b"a" * 100_000}), 2**20)
    assert (first / "a.txt").stat().st_size == 100_000
    again = cache.tree("1" * 40, lambda out: pytest.fail("downloaded twice"), 2**20)
    assert again == first
    cache.tree("2" * 40, _fill({"b.txt": b"b" * 100_000}), 2**20)
    assert first.exists()  # used just now: a running review may read it, so it stays a while
    os.utime(first / ".reviewbot-complete", (time.time() - 7200,) * 2)  # idle two hours
    third = cache.tree("3" * 40, _fill({"c.txt": b"c" * 100_000}), 2**20)
    assert (third / "c.txt").is_file() and not first.exists()  # the idle one made room
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_a_tree_too_large_is_not_kept(tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "cache", max_bytes=2**30)
    with pytest.raises(ArchiveTooLarge):
        cache.tree(SHA, _fill({"big.bin": b"x" * 200_000}), 100_000)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [f".too-large-{SHA}"]
    with pytest.raises(ArchiveTooLarge):  # remembered: not downloaded again
        cache.tree(SHA, lambda out: pytest.fail("downloaded again"), 100_000)
    bigger = cache.tree(SHA, _fill({"big.bin": b"x" * 200_000}), 2**20)  # a larger bound tries
    assert (bigger / "big.bin").stat().st_size == 200_000


def test_two_fills_of_one_sha_leave_one_whole_tree(tmp_path: Path) -> None:
    cache = ArchiveCache(tmp_path / "cache", max_bytes=2**30)
    files = {f"f{i}.txt": f"{i}\n".encode() * 1000 for i in range(50)}
    roots: list[Path] = []
    threads = [threading.Thread(target=lambda: roots.append(cache.tree(SHA, _fill(files), 2**24)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(set(roots)) == 1 and len(roots) == 4
    assert sorted(p.name for p in roots[0].iterdir() if not p.name.startswith(".")) == sorted(files)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [SHA]


@pytest.mark.parametrize("keep", [0.5, 0.01])
def test_an_archive_cut_short_is_a_broken_archive(tmp_path: Path, keep: float) -> None:
    import os
    whole = _tar(tmp_path / "a.tar.gz", [(_member("top/a.bin"), os.urandom(300_000))]).read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[:max(12, int(len(whole) * keep))])
    with pytest.raises(tarfile.ReadError):
        unpack(cut, tmp_path / "tree", 2**30)


def test_skipped_members_count_against_the_bound(tmp_path: Path) -> None:
    """Members the unpacker leaves out (over MAX_FILE_BYTES, bad names, links) are still
    decompressed to reach the next one: they count, so a bomb of skipped members stops early."""
    zeros = b"\0" * (8 * 2**20)  # each over MAX_FILE_BYTES: never written
    archive = _tar(tmp_path / "bomb.tar.gz", [(_member(f"top/big{i}.bin"), zeros)
                                              for i in range(6)])
    assert archive.stat().st_size < 400_000
    started = time.process_time()
    with pytest.raises(ArchiveTooLarge):
        unpack(archive, tmp_path / "tree", 20 * 2**20)
    assert time.process_time() - started < 1.0  # stopped at the third member, not the sixth


def test_unpacking_and_downloading_stop_at_the_deadline(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [(_member(f"top/f{i}.txt"), b"x") for i in range(5)])
    with pytest.raises(ArchiveTooSlow):
        unpack(archive, tmp_path / "tree", 2**20, deadline=time.monotonic() - 1)
    with pytest.raises(ArchiveTooSlow):
        copy_bounded(iter([b"x"] * 3), io.BytesIO(), 2**20, deadline=time.monotonic() - 1)


def test_a_planted_git_directory_and_a_too_deep_path_are_skipped(tmp_path: Path) -> None:
    deep = "top/" + "/".join(["d" * 200] * 25) + "/deep.txt"  # beyond PATH_MAX (4096)
    archive = _tar(tmp_path / "a.tar.gz", [
        (_member("top/.git/config"), b"[core]\n\tfsmonitor = touch /tmp/pwned\n"),
        (_member("top/sub/.GIT/hooks/x"), b"x"),
        (_member(deep), b"too deep"),
        (_member("top/src/ok.py"), b"ok = 1\n"),
    ])
    dest = tmp_path / "tree"
    unpack(archive, dest, 2**20)
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == ["src/ok.py"]


def test_what_a_killed_fill_left_is_removed_when_the_cache_opens(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    (root / ".fill-old" / "tree").mkdir(parents=True)
    (root / ".fill-running").mkdir()  # another process's fill, in progress
    old = time.time() - 7 * 3600
    os.utime(root / ".fill-old", (old, old))
    ArchiveCache(root, 2**30)
    assert sorted(p.name for p in root.iterdir()) == [".fill-running"]
