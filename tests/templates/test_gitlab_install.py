"""The GitLab job's install lines, run as the job runs them, on an image like the default one
(python:3.11-slim: Python and pip, no git).

The "image" is a directory of commands the job's shell may find on PATH: bash, the Python of a
fresh virtual environment, and, where the image has one, `apt-get`, which installs
git into that PATH as Debian's would (a link to the machine's git: the test cannot reach
Debian's mirrors). The package is a real git URL (`git+file://` of a real repository holding
this project at a commit), built by the real pip offline (no index, no build isolation). No
index is reachable, so the environment sees the packages the tests run with (a .pth file):
the job's pinned dependencies (`pip install -r constraints.txt`) install only when every pin
is the version tested here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parents[2]
COMPONENT = ROOT / "templates" / "review.yml"
INCLUDE = ROOT / "templates" / "gitlab" / "reviewbot.gitlab-ci.yml"

APT_GET = """#!/bin/sh
# Debian's apt-get, as far as the job uses it: `update`, then `install ... git`
case "$1" in
  update) exit 0 ;;
  install) for pkg in "$@"; do [ "$pkg" = git ] && ln -sf {git} "$(dirname "$0")/git"; done; exit 0 ;;
esac
exit 100
"""


def _component_job(inputs: dict[str, str]) -> dict[str, Any]:
    spec, _ = list(yaml.safe_load_all(COMPONENT.read_text()))
    values = {k: v.get("default", "") for k, v in spec["spec"]["inputs"].items()}
    values.update(inputs)
    text = COMPONENT.read_text().split("\n---\n", 1)[1]
    text = re.sub(r"\$\[\[ inputs\.(\w+) \]\]", lambda m: str(values[m.group(1)]), text)
    (job,) = yaml.safe_load(text).values()
    return dict(job)


def _include_job() -> dict[str, Any]:
    return dict(yaml.safe_load(INCLUDE.read_text())[".reviewbot"])


def _install_lines(job: dict[str, Any]) -> list[str]:
    lines = [*job.get("before_script", []), *job["script"]]
    return lines[:next(i for i, line in enumerate(lines) if line.startswith("reviewbot "))]


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A git URL pinned at a commit of a real repository holding this project's files."""
    repo = tmp_path_factory.mktemp("reviewbot-src")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                           timeout=60).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, env=env, capture_output=True, check=True,
                       timeout=120)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    return f"git+file://{repo}@{sha}"


def _image(root: Path, apt: bool) -> Path:
    """The commands of a python:3.11-slim-like image: no git; apt-get when `apt`."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("bash", "sh", "dirname", "ln"):
        os.symlink(shutil.which(name), bin_dir / name)  # type: ignore[arg-type]
    venv = root / "venv"
    # pip and setuptools come through the .pth too (a venv's own setuptools is too old)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([venv / "bin" / "python", "-c", where], capture_output=True,
                          text=True, check=True).stdout.strip()
    (Path(site) / "tested.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # a wrapper, not a link: a linked venv interpreter would not find its pyvenv.cfg
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {venv}/bin/python "$@"\n')
    (bin_dir / "python").chmod(0o755)
    if apt:
        (bin_dir / "apt-get").write_text(APT_GET.replace("{git}", shutil.which("git") or ""))
        (bin_dir / "apt-get").chmod(0o755)
    return bin_dir


def _run(lines: list[str], bin_dir: Path, package: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": str(bin_dir), "HOME": str(bin_dir.parent), "REVIEWBOT_PACKAGE": package,
        # offline: the test's pip reaches no index
        "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0",  # pip reads "0" here as --no-build-isolation
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    script = "set -e\n" + "\n".join(lines)  # GitLab runs each line in one shell, -e
    return subprocess.run([str(bin_dir / "bash"), "-c", script], env=env, capture_output=True,
                          text=True, timeout=300, check=False, cwd=bin_dir.parent)


@pytest.mark.parametrize("template", ["component", "include"])
def test_a_git_url_installs_on_an_image_without_git(template: str, package: str,
                                                     tmp_path: Path) -> None:
    job = _component_job({"package": package, "base_url": "http://127.0.0.1:9/v1"}) \
        if template == "component" else _include_job()
    assert job.get("image", "python:3.11-slim") == "python:3.11-slim"
    bin_dir = _image(tmp_path / "image", apt=True)
    assert not (bin_dir / "git").exists()
    proc = _run(_install_lines(job), bin_dir, package)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    where = "import reviewbot.tree as t; print(t.__file__)"
    installed = subprocess.run([bin_dir / "python", "-c", where], capture_output=True,
                               text=True, check=True, cwd=tmp_path)
    assert str(tmp_path / "image" / "venv") in installed.stdout  # this project, installed
    # every pin was met by what the tests ran with: nothing newer could have been resolved
    assert proc.stdout.count("Requirement already satisfied") >= 50, proc.stdout[-2000:]


def test_without_git_or_apt_the_job_says_what_to_do(package: str, tmp_path: Path) -> None:
    job = _component_job({"package": package, "base_url": "http://127.0.0.1:9/v1"})
    proc = _run(_install_lines(job), _image(tmp_path / "image", apt=False), package)
    assert proc.returncode == 1
    assert "this image has no git" in proc.stderr and "wheel URL" in proc.stderr


def test_both_templates_install_the_same_way() -> None:
    component = _install_lines(_component_job({"package": "x", "base_url": "y"}))
    include = _install_lines(_include_job())
    assert component == include[1:]  # the include checks first that the variable is set
    assert _component_job({"package": "pkg", "base_url": "y"})["variables"][
        "REVIEWBOT_PACKAGE"] == "pkg"


def test_the_constraints_pin_what_the_tests_ran_with() -> None:
    """reviewbot/data/constraints.txt is the review path's closure at the installed versions
    (scripts/constraints.py writes it; setup.sh installs with it)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from constraints import OUT, closure, render  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    pins = closure("reviewbot")
    assert {"python-gitlab", "openai", "pygithub", "httpx", "requests"} <= set(pins)
    assert OUT.read_text() == render(pins), "run scripts/constraints.py"
