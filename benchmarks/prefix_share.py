"""Do consecutive requests of one review share their prompt prefix? Measured two ways.

1. Exactly: the token ids of every chunk's request (vLLM's /tokenize with the chat template and
   the tools), and the longest common prefix of consecutive requests, in tokens and as a
   share of the shorter request. The system prompt and the tool schema come first and must be
   identical; only the per-chunk part (the user message's diff, the schema's row ranges at the
   end) may differ.
2. As the server sees it: vLLM's prefix-cache counters (`/metrics`) around one real review.

    python benchmarks/prefix_share.py --base-url http://127.0.0.1:8000/v1 [--max-context 4096]

Talks only to the server given (127.0.0.1 in the project's own runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import pairwise
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import metrics_delta, scrape

from reviewbot.config import resolve
from reviewbot.context import Context, Intent
from reviewbot.diff import parse
from reviewbot.engine import filters
from reviewbot.engine.build import make_engine


def change(files: int = 10, funcs: int = 6) -> bytes:
    """A many-file change, shaped like real Python edits (several chunks at a small context)."""
    out = []
    for f in range(files):
        out.append(f"diff --git a/pkg/mod{f}.py b/pkg/mod{f}.py\n--- a/pkg/mod{f}.py\n"
                   f"+++ b/pkg/mod{f}.py\n")
        for k in range(funcs):
            out.append(f"@@ -{1 + 20 * k},4 +{1 + 20 * k},5 @@ class Service{f}:\n"
                       f"     def handler_{k}(self, request):\n"
                       "-        data = request.json()\n"
                       "+        data = request.json() or {}\n"
                       f"+        self.log.debug('handler_{k} %s', data)\n"
                       "         return self.store.save(data['id'], data)\n"
                       f"     # end handler_{k}\n")
    return "".join(out).encode()


def common(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--max-context", type=int, default=4096)
    args = ap.parse_args()
    settings = resolve({"base_url": args.base_url, "max_context": args.max_context,
                        "max_output_tokens": 256, "temperature": 0.0}, env={}, file_values={})
    engine = make_engine(settings)
    changes, _ = filters.split(parse(change()))
    chunks = engine.fitting.chunks(changes, Context(Intent("Make the handlers robust")))
    root = engine.client.root_url
    with httpx.Client(timeout=120) as http:
        ids = []
        for chunk in chunks:
            messages, tool_list = engine.requests.request(chunk, Context(Intent("Make the handlers robust")))
            r = http.post(f"{root}/tokenize", json={"model": engine.model, "messages": messages,
                                                    "tools": tool_list,
                                                    "add_generation_prompt": True})
            r.raise_for_status()
            ids.append(r.json()["tokens"])
        pairs = [(common(a, b), min(len(a), len(b))) for a, b in pairwise(ids)]
        before = scrape(root)
        result = engine.review(changes, Context(Intent("Make the handlers robust")))
        after = scrape(root)
    delta = metrics_delta(before, after)
    print(json.dumps({
        "chunks": len(chunks),
        "request_tokens": [len(t) for t in ids],
        "common_prefix_tokens": [p for p, _ in pairs],
        "common_prefix_share_min": round(min(p / n for p, n in pairs), 3) if pairs else None,
        "review_complete": result.complete,
        "review_requests": result.stats.requests,
        "prefix_cache_queries": delta["prefix_cache_queries"],
        "prefix_cache_hits": delta["prefix_cache_hits"],
        "prefix_cache_hit_rate": delta["prefix_cache_hit_rate"],
    }, indent=2))


if __name__ == "__main__":
    main()
