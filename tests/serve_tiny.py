"""Serve the tiny random-weight model with the real vLLM CPU build until SIGTERM.

.ci/run starts this (`python -m tests.serve_tiny INFO STATE`) before the test command, so the suite shares one server; it writes
the server's details as JSON to the path given, which tests/conftest.py reads from
$REVIEWBOT_TEST_VLLM_INFO. Without that variable the suite starts its own server.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from reviewbot.server.process.launcher import VllmProcess
from reviewbot.server.tinymodel import build_tiny_model
from tests.conftest import tiny_spec


def main(info_path: str, state_dir: str) -> None:
    state = Path(state_dir)
    model_dir = build_tiny_model(state / "tiny-model")
    spec = tiny_spec(model_dir)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with VllmProcess(spec, log_path=state / "vllm.log", startup_timeout=900):
        Path(info_path).write_text(json.dumps({
            "base_url": f"{spec.root_url}/v1", "root_url": spec.root_url,
            "model": spec.served_model_name, "model_dir": str(model_dir),
            "max_model_len": spec.max_model_len, "log_path": str(state / "vllm.log"),
        }))
        print(f"serving {spec.served_model_name} at {spec.root_url}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
