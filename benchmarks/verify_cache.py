"""What the verification pass costs on a real vLLM, and how much of it the prefix cache serves.

One review per setting (verify off, verify on, verify on with samples = 3), each of the same
many-file change under a title no earlier review had (a random nonce per run, at the top of the
user message), so that no review finds its own chunks cached by an earlier one (the system prompt and the tools, identical in every review, are cached after the
first, as in production). Around each review: vLLM's prefix-cache counters from /metrics.

    python benchmarks/verify_cache.py --base-url http://127.0.0.1:8000/v1 [--max-context 8192]

Talks only to the server given (127.0.0.1 in the project's own runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import metrics_delta, scrape
from prefix_share import change

from reviewbot.config import resolve
from reviewbot.context import Context, Intent
from reviewbot.diff import parse
from reviewbot.engine import filters
from reviewbot.engine.build import make_engine

SETTINGS = {"verify off": {"verify": False}, "verify on": {"verify": True},
            "verify on, samples 3": {"verify": True, "samples": 3}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--max-context", type=int, default=8192)
    ap.add_argument("--temperature", type=float, default=0.7)
    args = ap.parse_args()
    changes, _ = filters.split(parse(change()))
    out = {}
    nonce = uuid.uuid4().hex[:12]  # per invocation: an earlier run's chunks are never cached
    for n, (name, flags) in enumerate(SETTINGS.items()):
        settings = resolve({"base_url": args.base_url, "max_context": args.max_context,
                            "temperature": args.temperature, **flags}, env={}, file_values={})
        engine = make_engine(settings)
        before = scrape(engine.client.root_url)
        result = engine.review(changes, Context(Intent(f"Make the handlers robust ({nonce} {n})")))
        delta = metrics_delta(before, scrape(engine.client.root_url))
        s = result.stats
        out[name] = {
            "complete": result.complete, "chunks": s.chunks, "requests": s.requests,
            "verify_requests": s.verify_requests, "verify_failed": s.verify_failed,
            "prompt_tokens": s.usage.prompt_tokens, "completion_tokens": s.usage.completion_tokens,
            "candidates": s.candidates, "kept": len(result.findings), "dropped": s.dropped,
            "prefix_cache_queries": delta["prefix_cache_queries"],
            "prefix_cache_hits": delta["prefix_cache_hits"],
            "prefix_cache_hit_rate": round(delta["prefix_cache_hit_rate"] or 0, 3),
            "wall_seconds": round(s.wall_seconds, 2),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
