"""The bot's own CPU for a change (issue 14): parse, filter, chunk and render every request,
with the bytes-based estimate counter (no tokenizer, no server), in CPU seconds per MB.

    python benchmarks/chunking_cpu.py CHANGE.diff
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from reviewbot import diff
from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.engine import filters
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import EstimateTokenCounter


def main(path: str) -> None:
    raw = Path(path).read_bytes()
    # the forced call: the figures in docs/performance.md were measured with it
    settings = resolve({"base_url": "http://127.0.0.1:9/v1", "verify": False,
                        "findings_format": "tool"}, env={},
                       config_path="/dev/null")
    engine = Engine(settings, ModelClient(settings.base_url, None, 1, 0), EstimateTokenCounter(),
                    "m", 65536)
    started = time.process_time()
    reviewed, _ = filters.split(diff.parse(raw), settings.exclude)
    chunks = engine.fitting.chunks(reviewed, Context())
    for chunk in chunks:
        engine.requests.request(chunk, Context())
    cpu = time.process_time() - started
    print(f"cpu {cpu:.3f} s, {cpu / (len(raw) / 2**20):.3f} s/MB, {len(chunks)} chunks")


if __name__ == "__main__":
    main(sys.argv[1])
