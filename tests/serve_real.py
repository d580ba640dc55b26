"""Serve the real demo model (Qwen2.5-Coder-1.5B-Instruct) with the vLLM CPU build until SIGTERM.

.ci/run starts this (`python -m tests.serve_real INFO STATE`) beside tests/serve_tiny.py; the
`realmodel` tests read the server's details from $REVIEWBOT_TEST_REALMODEL_INFO. The model is
fetched and converted on the first run (reviewbot_server.realmodel) and reused after.
"""

from __future__ import annotations

import sys
from pathlib import Path

from reviewbot_server import realmodel
from reviewbot_server.process.launcher import find_vllm_python
from tests.conftest import memory_short, real_spec
from tests.serve_tiny import serve


def main(info_path: str, state_dir: str) -> None:
    if short := memory_short():
        raise SystemExit(f"serve_real: {short}")
    folder = realmodel.real_model(realmodel.default_cache(), find_vllm_python(),
                                  lambda line: print(line, flush=True))
    serve(real_spec(folder), Path(info_path), Path(state_dir) / "vllm-real.log")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
