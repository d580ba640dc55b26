"""Process-group keeper for one vLLM server: `python _reaper.py PARENT GRACE -- ARGV…`.

Run by path with any Python 3 (stdlib only). It leads a process group, runs ARGV in that
group and makes sure no member outlives it:
- when its parent (pid PARENT) dies, even by SIGKILL, PR_SET_PDEATHSIG wakes it (it fires
  when the *thread* that spawned us exits: spawn from a thread that lives as long as we do);
- on SIGTERM/SIGINT/SIGHUP or parent death: SIGTERM the group, wait GRACE s, SIGKILL it;
- when ARGV exits by itself: SIGKILL what it left behind (vLLM's engine core and workers
  survive a SIGKILLed API server otherwise), then exit with ARGV's status (128+N on signal N).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1
_POLL_S = 0.5
_ORPHAN_GRACE_S = 3.0


def _kill_group(sig: int) -> None:
    try:
        os.killpg(0, sig)
    except ProcessLookupError:
        pass


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str]) -> int:
    parent, grace = int(argv[1]), float(argv[2])
    command = argv[argv.index("--") + 1 :]
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    if os.getppid() != parent:  # the parent died before prctl took effect
        return 1
    child = subprocess.Popen(command)  # same process group as us
    while child.poll() is None and not stop:
        try:
            child.wait(timeout=_POLL_S)
        except subprocess.TimeoutExpired:
            stop = stop or os.getppid() != parent
    if os.getppid() != parent:  # nobody left to drain for: do not wait long
        grace = min(grace, _ORPHAN_GRACE_S)
    if child.poll() is None:  # asked to stop: be gentle first
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _kill_group(signal.SIGTERM)
        _kill_group(signal.SIGCONT)  # a stopped (hung) member cannot act on SIGTERM
        deadline = time.monotonic() + grace
        while child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for pid in _members_except_self():  # the child too, if it ignored SIGTERM
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return _status(child.wait())


def _members_except_self() -> list[int]:
    me, pgid = os.getpid(), os.getpgrp()
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(name))
    return members


if __name__ == "__main__":
    sys.exit(main(sys.argv))
