"""What the schema layout does to the prompt prefix that chunks of one review share.

The finding schema names the anchor first (think before committing). Written inline, the
per-chunk row ranges would then sit near the start of the tool JSON, and the prefix shared by
two chunks would end there; reviewbot keeps them in `$defs` at the end. This measures both
layouts with the server's own chat template (vLLM /tokenize): the common prefix, in tokens, of
consecutive chunks' requests.

    python benchmarks/schema_layout.py --base-url http://127.0.0.1:8000/v1 [--max-context 4096]

Talks only to the server given (127.0.0.1 in the project's own runs).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prefix_share import change, common

from reviewbot.config import resolve
from reviewbot.context import Context, Intent
from reviewbot.diff import parse
from reviewbot.engine import filters
from reviewbot.engine.build import make_engine


def inline(tool: dict[str, Any]) -> dict[str, Any]:
    """The same tool with every `$ref` replaced by its definition, and no `$defs`."""
    tool = copy.deepcopy(tool)
    params = tool["function"]["parameters"]
    defs = params.pop("$defs")

    def resolve_refs(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve_refs(defs[node["$ref"].rsplit("/", 1)[1]])
            return {k: resolve_refs(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve_refs(v) for v in node]
        return node

    tool["function"]["parameters"] = resolve_refs(params)
    return tool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--max-context", type=int, default=4096)
    args = ap.parse_args()
    settings = resolve({"base_url": args.base_url, "max_context": args.max_context},
                       env={}, file_values={})
    engine = make_engine(settings)
    changes, _ = filters.split(parse(change()))
    chunks = engine.fitting.chunks(changes, Context(Intent("Make the handlers robust")))
    out: dict[str, Any] = {"chunks": len(chunks)}
    with httpx.Client(timeout=120) as http:
        for layout in ("$defs at the end (reviewbot)", "inline, anchor first"):
            ids = []
            for chunk in chunks:
                messages, tool_list = engine.requests.request(chunk, Context(Intent("Make the handlers robust")))
                if layout.startswith("inline"):
                    tool_list = [inline(t) for t in tool_list]
                r = http.post(f"{engine.client.root_url}/tokenize", json={
                    "model": engine.model, "messages": messages, "tools": tool_list,
                    "add_generation_prompt": True})
                r.raise_for_status()
                ids.append(r.json()["tokens"])
            shared = [common(a, b) for a, b in pairwise(ids)]
            out[layout] = {"request_tokens": [len(t) for t in ids],
                           "common_prefix_tokens": shared}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
