"""The process-group keeper, with real processes: whatever its command leaves behind is killed
when the command exits, its exit status passes through, and a parent killed with SIGKILL takes
the whole group with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reviewbot_server.process.launcher import REAPER


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def _gone(pid: int, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds  # a bound, not a timing: it ends as soon as it can
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _alive(pid)


def test_a_command_that_exits_leaves_nothing_and_its_status_passes(tmp_path: Path) -> None:
    pid_file = tmp_path / "orphan.pid"
    # the command starts a grandchild that would outlive it, then exits with 7
    command = f"sleep 300 & echo $! > {pid_file}; exit 7"
    keeper = subprocess.run([sys.executable, str(REAPER), str(os.getpid()), "5", "--",
                             "sh", "-c", command], timeout=60, check=False,
                            start_new_session=True)
    assert keeper.returncode == 7
    assert _gone(int(pid_file.read_text()))


def test_a_parent_killed_with_sigkill_takes_the_group_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(REAPER)!r}, str(os.getpid()), '2', '--', "
        f"'sh', '-c', 'echo $$ > {pid_file}; exec sleep 300'], start_new_session=True)\n"
        "time.sleep(300)\n")])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the keeper's command never started"
        time.sleep(0.1)
    child = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert _gone(child)
