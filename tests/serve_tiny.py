"""Serve the tiny random-weight model with the real vLLM CPU build until SIGTERM.

.ci/run starts this (`python -m tests.serve_tiny INFO STATE`) before the test command, so the
suite shares one server (started again when it dies by itself); it writes
the server's details as JSON to the path given, which tests/conftest.py reads from
$REVIEWBOT_TEST_VLLM_INFO. Without that variable the suite starts its own server.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

from reviewbot_server.process.launcher import LaunchSpec, VllmProcess
from reviewbot_server.tinymodel import build_tiny_model
from tests.conftest import tiny_spec


def main(info_path: str, state_dir: str) -> None:
    state = Path(state_dir)
    serve(tiny_spec(build_tiny_model(state / "tiny-model")), Path(info_path), state / "vllm.log")


MAX_RESTARTS = 3  # a server that keeps dying is not hidden: the run ends and says so
POLL_S = 5


def serve(spec: LaunchSpec, info_path: Path, log_path: Path) -> None:
    """Serve `spec` until SIGTERM; its details in `info_path` once it answers. A server that
    exits on its own (killed for memory, an engine crash) is started again on the same port,
    at most MAX_RESTARTS times, and this process's output says when and why."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    for restart in range(MAX_RESTARTS + 1):
        with VllmProcess(spec, log_path=log_path, startup_timeout=900) as server:
            info_path.write_text(json.dumps({
                "base_url": f"{spec.root_url}/v1", "root_url": spec.root_url,
                "model": spec.served_model_name, "model_dir": str(spec.model_dir),
                "max_model_len": spec.max_model_len, "log_path": str(log_path),
            }))
            print(f"serving {spec.served_model_name} at {spec.root_url}", flush=True)
            while not stop.wait(POLL_S) and server.poll() is None:
                pass
            if stop.is_set():
                return
            print(f"{time.strftime('%H:%M:%S')} the server exited by itself (status "
                  f"{server.poll()}); its last lines:", *server.tail(), sep="\n", flush=True)
        if restart < MAX_RESTARTS:
            print(f"starting it again ({restart + 1} of {MAX_RESTARTS})", flush=True)
    raise SystemExit(f"the {spec.served_model_name} server exited {MAX_RESTARTS + 1} times")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
