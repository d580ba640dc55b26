"""server/ is a package of its own (reviewbot-server): it builds into a wheel that holds only
reviewbot_server, and the client's `reviewbot server` runs it when it is installed and says how
to install it when it is not."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[2]

# the client's CLI in a Python where reviewbot_server cannot be imported, as on a CI runner
_WITHOUT_SERVER = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "reviewbot_server":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Hide())
from reviewbot.cli import main
main(sys.argv[1:])
"""


def _client(*args: str, hide_server: bool) -> subprocess.CompletedProcess[str]:
    code = _WITHOUT_SERVER if hide_server else "import sys\nfrom reviewbot.cli import main\nmain(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60)


def test_without_the_server_package_reviewbot_server_says_how_to_install_it() -> None:
    for args in (["server", "plan", "--gpus", "1"], ["server", "--help"], ["demo"]):
        out = _client(*args, hide_server=True)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.count("\n") == 1 and "pip install ./server" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    listed = _client("--help", hide_server=True)
    assert listed.returncode == 0 and "server" in listed.stdout


def test_with_the_server_package_reviewbot_server_runs_it_and_its_errors_keep_their_codes() -> None:
    out = _client("server", "--help", hide_server=False)
    assert out.returncode == 0 and "fetch-model" in out.stdout and "up" in out.stdout
    bad = _client("server", "check", "--base-url", "ftp://x", hide_server=False)
    assert bad.returncode == 2 and bad.stderr.startswith("reviewbot: error: "), bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_server_wheel_holds_only_the_server_package(tmp_path: Path) -> None:
    source = tmp_path / "server"  # the build writes build/ and *.egg-info beside its sources
    shutil.copytree(ROOT / "server", source, ignore=shutil.ignore_patterns("*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path), str(source)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("reviewbot_server-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("reviewbot_server-")}
    assert tops == {"reviewbot_server"}
    assert "reviewbot_server/render/templates/nginx.conf.j2" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "reviewbot-server = reviewbot_server.cli:server" in zipfile.ZipFile(wheel).read(
        entry).decode()


def test_no_top_level_module_shadows_the_standard_library() -> None:
    """convert_gguf.py runs as a script in vLLM's interpreter, with this folder first on
    sys.path: an `http.py` there broke urllib inside transformers."""
    names = {p.stem for p in (ROOT / "server" / "reviewbot_server").iterdir()}
    assert names & sys.stdlib_module_names == set()
