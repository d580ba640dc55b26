"""Prompt overhead (issue 14): the prompt tokens of a review against its diff's own tokens.

No server: the engine chunks with Qwen's real tokenizer (a tokenizer.json, e.g. the model dir
benchmarks/qwen_tokenizer.py writes) and renders every request as it would send it; tokens of
the messages are counted with the chat template approximated as LocalTokenCounter does, the
tools as their JSON. The diff's own tokens are counted on the raw unified diff of the files the
review covers (the same filters), file by file.

    python benchmarks/prompt_overhead.py --tokenizer /work/gpuprep/model/tokenizer.json \
        --diff pydantic-2.9.2..2.10.6.diff [--max-context 65536] [--chunk-tokens N]

Prints JSON: diff tokens (all files, reviewed files), prompt tokens (single pass, one request
per chunk), the ratios, chunks, where the prompt's tokens go (fixed part per chunk, file and
hunk headers, row labels) and the CPU seconds of chunking.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from reviewbot import diff
from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.engine import filters
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import LocalTokenCounter


def raw_files(raw: bytes) -> dict[str, str]:
    """The unified diff split per file (by `diff --git` headers), keyed by the new path."""
    text = raw.decode("utf-8", "replace")
    out: dict[str, str] = {}
    for part in re.split(r"(?m)^(?=diff --git )", text):
        m = re.match(r"diff --git a/(\S+) b/(\S+)", part)
        if m:
            out[m.group(2)] = part
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--diff", type=Path, required=True)
    ap.add_argument("--max-context", type=int, default=65536)
    ap.add_argument("--chunk-tokens", type=int, default=0)
    args = ap.parse_args()
    raw = args.diff.read_bytes()
    settings = resolve({"base_url": "http://127.0.0.1:9/v1", "verify": False,
                        "max_context": args.max_context, "chunk_tokens": args.chunk_tokens},
                       env={}, config_path="/dev/null")
    counter = LocalTokenCounter(args.tokenizer)
    engine = Engine(settings, ModelClient(settings.base_url, None, 1, 0), counter, "m",
                    args.max_context)
    c0 = time.process_time()
    changes = diff.parse(raw)
    reviewed, _ = filters.split(changes, settings.exclude)
    chunks = engine.fitting.chunks(reviewed, Context())
    cpu = time.process_time() - c0
    per_file = raw_files(raw)
    paths = {f.path for f in reviewed.files}
    diff_all = sum(counter.count_texts(list(per_file.values())))
    diff_reviewed = sum(counter.count_texts([t for p, t in per_file.items() if p in paths]))
    prompt = 0
    fixed = engine.counter.count_request(*engine.requests.request(chunks[0].__class__(0, ()),
                                                                             Context()))
    for chunk in chunks:
        prompt += engine.counter.count_request(*engine.requests.request(chunk, Context()))
    labels = [line for c in chunks for p in c.pieces for line in p.text.split("\n")
              if re.match(r"^[+\-]\d+ ", line)]
    label_tokens = sum(counter.count_texts([re.match(r"^[+\-]\d+ ", ln).group(0)  # type: ignore[union-attr]
                                            for ln in labels[:20000]]))
    label_tokens = int(label_tokens * len(labels) / max(1, min(len(labels), 20000)))
    print(json.dumps({
        "diff": str(args.diff), "bytes": len(raw), "files": len(changes.files),
        "files_reviewed": len(reviewed.files), "chunks": len(chunks),
        "diff_tokens_all_files": diff_all, "diff_tokens_reviewed_files": diff_reviewed,
        "prompt_tokens_single_pass": prompt,
        "ratio_to_all": round(prompt / diff_all, 3),
        "ratio_to_reviewed": round(prompt / diff_reviewed, 3),
        "fixed_tokens_per_chunk": fixed, "fixed_total": fixed * len(chunks),
        "labelled_lines": len(labels), "row_label_tokens_est": label_tokens,
        "chunking_cpu_s": round(cpu, 2), "cpu_s_per_mb": round(cpu / (len(raw) / 2**20), 2),
    }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
