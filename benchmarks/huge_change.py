"""A huge change reviewed completely in bounded time (issue 14): the bot's side alone.

The model is tests/fake_openai.py's scripted server on 127.0.0.1 (it answers every chunk at
once with no findings, and no /tokenize, so the bot counts with its estimate), so what is
measured is the bot: parsing, chunking, rendering, sending and collecting every chunk.

    python benchmarks/huge_change.py CHANGE.diff [--copies 16]

`--copies N` reviews N copies of the change under different top directories (the 20 MB case
from a 1.26 MB release range). Prints wall, CPU, chunks, requests and whether every changed
line reached the model.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reviewbot import diff
from reviewbot.config import resolve
from reviewbot.engine.build import make_engine
from tests.fake_openai import FakeOpenAI, Reply


def copies(text: str, n: int) -> str:
    out = []
    for k in range(n):
        t = re.sub(r"(?m)^diff --git a/(\S+) b/(\S+)",
                   lambda m, k=k: f"diff --git a/c{k}/{m.group(1)} b/c{k}/{m.group(2)}", text)
        t = re.sub(r"(?m)^--- a/", f"--- a/c{k}/", t)
        out.append(re.sub(r"(?m)^\+\+\+ b/", f"+++ b/c{k}/", t))
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("diff", type=Path)
    ap.add_argument("--copies", type=int, default=1)
    args = ap.parse_args()
    text = copies(args.diff.read_text(encoding="utf-8", errors="replace"), args.copies)
    changes = diff.parse(text)

    def empty(body: dict, n: int) -> Reply:
        return Reply(tool_args={"summary": "", "findings": []})

    with FakeOpenAI(empty, max_model_len=65536, tokenize=False) as server:
        settings = resolve({"base_url": server.base_url, "concurrency": 32}, env={},
                           config_path="/dev/null")
        engine = make_engine(settings)
        cpu0, t0 = time.process_time(), time.monotonic()
        result = engine.review(changes)
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    s = result.stats
    print(json.dumps({"mb": round(len(text.encode()) / 2**20, 2), "files": len(changes.files),
                      "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "chunks": s.chunks,
                      "requests": s.requests, "changed_lines": s.changed_lines,
                      "changed_lines_sent": s.changed_lines_sent, "complete": s.complete}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
