"""The container image (Containerfile), built for real with buildah (vfs storage, chroot
isolation, a private storage root) on a base bootstrapped here from Debian's packages, as no
registry is reachable from CI: it installs offline from a wheelhouse made on this machine, runs
as a numeric non-root user, carries its OCI labels, holds no torch, and reviews a diff against
the real vLLM CPU server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import image_base
from tests.conftest import TINY_FORMAT, VllmServer

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("buildah", "debootstrap")
pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS) or os.geteuid() != 0,
    reason="the image test needs root, buildah and debootstrap (scripts/setup.sh installs them)")


class Buildah:
    def __init__(self, where: Path) -> None:
        self.flags = ["--root", str(where / "root"), "--runroot", str(where / "run"),
                      "--storage-driver", "vfs"]

    def __call__(self, *args: str, timeout: float = 900) -> str:
        done = subprocess.run(["buildah", *self.flags, *args], capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, f"buildah {args[0]}: {done.stderr[-3000:]}"
        return done.stdout.strip()


def _base_tar(where: Path) -> Path:
    """The Debian base (tests/image_base.py): $REVIEWBOT_TEST_BASE_TAR when .ci/run made it
    beforehand, else made here."""
    given = os.environ.get("REVIEWBOT_TEST_BASE_TAR")
    if given and Path(given).is_file():
        return Path(given)
    return image_base.make(where / "base.tar")


def _context(where: Path) -> Path:
    """What `make image` sends: the repository's files (tracked and new, not ignored), plus a
    wheelhouse of the project's dependencies and build backend, made with this machine's
    package index."""
    ctx = where / "context"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (ctx / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, ctx / name)
    wheels = subprocess.run(
        [str(ROOT / ".venv/bin/pip"), "wheel", "-q", "--wheel-dir", str(ctx / "wheelhouse"),
         "-c", str(ROOT / "reviewbot/data/constraints.txt"), f"{ctx}[postgres]",
         "setuptools>=77", "wheel"],
        capture_output=True, text=True, timeout=900)
    assert wheels.returncode == 0, wheels.stderr[-3000:]
    return ctx


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Buildah, str]]:
    where = tmp_path_factory.mktemp("image")
    buildah = Buildah(where)
    try:
        base = buildah("from", "scratch")
        buildah("add", base, str(_base_tar(where)), "/")
        buildah("commit", "--rm", base, "localhost/reviewbot-test-base:bookworm")
        buildah("build", "--isolation", "chroot", "-f", "Containerfile",
                "--build-arg", "BASE=localhost/reviewbot-test-base:bookworm",
                "--build-arg", "PIP_NO_INDEX=1", "--build-arg", "PIP_FIND_LINKS=/src/wheelhouse",
                "--build-arg", "REVISION=test-revision", "-t", "localhost/reviewbot:test",
                str(_context(where)), timeout=1200)
        yield buildah, "localhost/reviewbot:test"
    finally:
        subprocess.run(["buildah", *buildah.flags, "rm", "--all"], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


def test_the_image_is_labelled_and_runs_as_a_numeric_non_root_user(
        image: tuple[Buildah, str]) -> None:
    buildah, name = image
    config = json.loads(buildah("inspect", "--type", "image", name))["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["reviewbot"]
    assert config["Cmd"] == ["webhook", "--host", "0.0.0.0", "--port", "8080"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.revision"] == "test-revision"
    assert labels["org.opencontainers.image.version"] == "0.1.0"
    assert labels["org.opencontainers.image.licenses"] == "MIT"
    assert labels["org.opencontainers.image.source"].startswith("https://")
    ctr = buildah("from", name)
    assert buildah("run", "--isolation", "chroot", ctr, "--", "id", "-u") == "10001"
    assert "webhook" in buildah("run", "--isolation", "chroot", ctr, "--", "reviewbot", "--help")
    # the review side only: nothing of the model server's stack
    found = buildah("run", "--isolation", "chroot", ctr, "--", "python3", "-c",
                    "import importlib.util as u; print([m for m in ('torch', 'vllm', 'psycopg')"
                    " if u.find_spec(m)])")
    assert found == "['psycopg']"
    # the listener finds definitions in head trees with git grep
    assert buildah("run", "--isolation", "chroot", ctr, "--", "git", "--version").startswith(
        "git version")


def test_the_image_reviews_a_diff_against_the_real_vllm(
        image: tuple[Buildah, str], vllm_server: VllmServer) -> None:
    buildah, name = image
    ctr = buildah("from", name)
    buildah("copy", "--chown", "10001:10001", ctr, str(ROOT / "reviewbot/data/sample.diff"),
            "/var/lib/reviewbot/change.diff")
    done = subprocess.run(
        ["buildah", *buildah.flags, "run", "--isolation", "chroot", ctr, "--", "reviewbot",
         "review", "--diff", "/var/lib/reviewbot/change.diff", "--base-url",
         vllm_server.base_url, "--output", "json", "--config", "/dev/null", "--no-progress",
         *TINY_FORMAT],
        capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    stats = json.loads(done.stdout)["stats"]
    assert stats["complete"] is True and stats["changed_lines_sent"] == stats["changed_lines"]
