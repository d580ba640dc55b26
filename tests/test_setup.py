"""The set-up installs what is missing and leaves the machine's services alone: a running nginx
keeps running, nothing is stopped, disabled or reconfigured, and the packages' daemons do not
start while they install. apt-get and the service tools are recording stand-ins (the test
installs nothing); the running service is a real nginx on a private port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "system-packages.sh"
RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
if [ "$(basename "$0")" = apt-get ] && case " $* " in *" install "*) true;; *) false;; esac; then
  if "{policy}" >/dev/null 2>&1; then echo "policy allows" >> "{log}";
  else echo "policy refuses $?" >> "{log}"; fi
fi
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(name="nginx")
def nginx_fixture(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(binary):
        pytest.fail("nginx is missing: scripts/setup.sh installs it")
    port, root = _free_port(), tmp_path / "nginx"
    root.mkdir()
    (root / "nginx.conf").write_text(
        f"daemon off; pid {root}/nginx.pid; error_log {root}/error.log;\n"
        f"events {{}}\nhttp {{ access_log off; client_body_temp_path {root};\n"
        f"  server {{ listen 127.0.0.1:{port}; return 204; }} }}\n")
    proc = subprocess.Popen([binary, "-p", str(root), "-c", str(root / "nginx.conf")])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("nginx did not start")
    yield proc, port
    proc.terminate()
    proc.wait(timeout=10)


def _run(tmp_path: Path, policy: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """The script as root on a machine that lacks nginx, haproxy, buildah and debootstrap."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("apt-get", "systemctl", "service", "invoke-rc.d", "update-rc.d"):
        stub = bin_dir / tool
        stub.write_text(RECORDER.format(log=log, policy=policy))
        stub.chmod(0o755)
    (bin_dir / "id").write_text("#!/bin/sh\necho 0\n")  # root
    (bin_dir / "id").chmod(0o755)
    for tool in ("bash", "ls", "chmod", "rm", "cat", "basename", "sh", "git"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_dir), "POLICY_RC_D": str(policy)}, check=False)
    return proc, log.read_text() if log.exists() else ""


def test_setup_leaves_a_running_service_running(
        tmp_path: Path, nginx: tuple[subprocess.Popen[bytes], int]) -> None:
    proc, port = nginx
    policy = tmp_path / "policy-rc.d"
    done, calls = _run(tmp_path, policy)
    assert done.returncode == 0, done.stderr
    assert "install -y -qq --no-install-recommends nginx haproxy buildah debootstrap" \
        in calls
    assert "policy refuses 101" in calls  # no daemon starts while the packages install
    assert not any(line.split()[0] in ("systemctl", "service", "invoke-rc.d", "update-rc.d")
                   for line in calls.splitlines())
    assert not policy.exists()  # its own policy file, removed again
    assert proc.poll() is None
    socket.create_connection(("127.0.0.1", port), timeout=2).close()  # still serving


def test_a_policy_the_machine_already_has_is_left_as_it_is(tmp_path: Path) -> None:
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\n# the machine's own\nexit 0\n")
    policy.chmod(0o755)
    done, calls = _run(tmp_path, policy)
    assert done.returncode == 0, done.stderr
    assert policy.read_text() == "#!/bin/sh\n# the machine's own\nexit 0\n"
    assert "policy allows" in calls


def test_the_real_model_is_not_started_without_the_memory_it_needs() -> None:
    """On a busy machine `make test` timed out after 600 s per test while the real model's
    server started; now the start is refused at once, in one line that says what to do."""
    from tests.conftest import memory_short

    assert memory_short(0) is None
    short = memory_short(10**6)
    assert short is not None and "make test-fast" in short and "\n" not in short
    proc = subprocess.run([sys.executable, "-c", ("import tests.conftest as c; "
                           "import tests.serve_real as s; "
                           "s.memory_short = lambda: c.memory_short(10**6); "
                           "s.main('/nonexistent/info.json', '/nonexistent')")],
                          cwd=SCRIPT.parents[1], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.strip().startswith("serve_real: the real model")
