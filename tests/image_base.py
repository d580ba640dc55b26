"""The Debian base of the image test (tests/test_image.py): bookworm minbase with python3, venv,
CA certificates and git, made with debootstrap from Debian's packages, as a tarball.

    python -m tests.image_base PATH   # made once; an existing PATH is kept

`.ci/run` makes it while the vLLM servers start and passes it on as $REVIEWBOT_TEST_BASE_TAR,
so `make test` does not wait for it (about 50 s on 2 cores)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DEBIAN_MIRROR = os.environ.get("REVIEWBOT_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def make(tar: Path) -> Path:
    """`tar`, made when it is not there yet (written beside it, then renamed: never half)."""
    if tar.is_file():
        return tar
    tar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tar.parent) as scratch:
        rootfs = Path(scratch) / "rootfs"
        done = subprocess.run(
            ["debootstrap", "--variant=minbase",
             "--include=python3,python3-venv,ca-certificates,git", "bookworm", str(rootfs),
             DEBIAN_MIRROR], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(rootfs / cache, ignore_errors=True)
        partial = Path(scratch) / "base.tar"
        with tarfile.open(partial, "w") as out:
            out.add(rootfs, arcname=".")
        partial.replace(tar)
    return tar


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.image_base PATH")
    try:
        print(make(Path(sys.argv[1])))
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        sys.exit(f"debootstrap failed: {str(exc).strip()[-500:]}")
