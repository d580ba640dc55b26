"""Cleanup that survives a killed pytest: a watcher in its own session waits for the test
process to end (however it ends: a normal exit, ^C, SIGTERM or SIGKILL), then runs a stop
command and removes folders. A fixture that tears down normally calls `done()` first.

    python -m tests.cleanup PID DIR [DIR …] [-- COMMAND …]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

POLL_S = 0.5
STOP_TIMEOUT_S = 60


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Watcher:
    process: subprocess.Popen[bytes]

    def done(self) -> None:
        """The owner cleaned up itself: the watcher has nothing left to do."""
        self.process.kill()
        self.process.wait(timeout=10)


def after_exit(folders: list[Path], command: list[str] | None = None) -> Watcher:
    """When this process ends, run `command` (if any) and remove `folders`."""
    argv = [sys.executable, "-m", "tests.cleanup", str(os.getpid()), *map(str, folders)]
    if command:
        argv += ["--", *command]
    return Watcher(subprocess.Popen(argv, start_new_session=True, cwd=Path(__file__).parents[1],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL))


def main(argv: list[str]) -> None:
    pid, rest = int(argv[0]), argv[1:]
    folders, command = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest \
        else (rest, [])
    while _alive(pid):
        time.sleep(POLL_S)
    if command:
        subprocess.run(command, capture_output=True, timeout=STOP_TIMEOUT_S, check=False)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
