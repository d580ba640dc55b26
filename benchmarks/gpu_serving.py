"""Serving flags on the GPU (issues 13 and 14): for each `--max-num-batched-tokens` /
`--max-num-seqs` pair, start vLLM, read its memory accounting from the log (weights, KV cache
memory and tokens, CUDA graph memory), measure the prefill rate, run whole reviews, stop it.

Runs ON the device machine after the payload is unpacked (docs/performance.md, "How to repeat
it"), with gpu_run.py's install, server start and metrics:

    python3 benchmarks/gpu_serving.py --payload /tmp/payload --configs 8192:256,16384:256 \
        --diff /tmp/payload/diffs/large.diff --reviews defaults,t0 --out $OUT

Prefill: `--prefill-requests` completions of `--prefill-tokens` tokens each, all at once, every
prompt with its own leading nonce (no prefix-cache hits), `max_tokens` 1; the rate is the prompt
tokens vLLM counted (/metrics) over the wall.

Reviews (`--reviews`, each after a prefix-cache reset): `defaults`; `t0` (temperature 0: a
random model then decodes every answer to its reserve); `fixed512` (temperature 0 and
max_output_tokens 512: a fixed realistic answer length); `unitN` (chunk_tokens N); `noverify`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_run as g

LOG_PATTERNS = {
    "weights_gib": r"Model loading took ([\d.]+) ?GiB",
    "available_kv_gib": r"Available KV cache memory: ([\d.]+) ?GiB",
    "kv_tokens": r"GPU KV cache size: ([\d,]+) tokens",
    "max_concurrency": r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x",
    "cuda_graph_gib": r"Graph capturing finished in \d+ secs?, took ([\d.\-]+) GiB",
    "torch_compile_s": r"torch.compile takes ([\d.]+) s in total",
}


def read_log(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, pattern in LOG_PATTERNS.items():
        found = re.findall(pattern, text)
        if found:
            value = found[-1].replace(",", "")
            out[key] = float(value) if "." in value else int(value)
    out["memory_lines"] = [line[-220:] for line in text.splitlines()
                           if re.search(r"GiB|KV cache|cudagraph|CUDA graph", line)][-25:]
    return out


def words(rng: random.Random, n: int) -> str:
    vocab = ["def", "return", "self", "value", "None", "if", "else", "for", "in", "range",
             "import", "class", "yield", "lambda", "try", "except", "raise", "with", "as"]
    return " ".join(rng.choice(vocab) + str(rng.randrange(1000)) for _ in range(n))


def prefill(url: str, requests: int, tokens: int) -> dict[str, Any]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", timeout=600, max_retries=0)
    rng = random.Random(2026)
    probe = client.completions.create(model=g.SERVED, prompt=words(rng, 1000), max_tokens=1)
    per_word = (probe.usage.prompt_tokens if probe.usage else 2000) / 1000
    n_words = int(tokens / per_word)
    prompts = [f"{uuid.uuid4().hex} {i} " + words(random.Random(i), n_words) for i in range(requests)]

    def one(prompt: str) -> int:
        r = client.completions.create(model=g.SERVED, prompt=prompt, max_tokens=1)
        return r.usage.prompt_tokens if r.usage else 0

    g.reset_cache(url)
    m0 = g.metrics(url)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=requests) as pool:
        counted = sum(pool.map(one, prompts))
    wall = time.monotonic() - t0
    d = g.delta(m0, g.metrics(url))
    prompt = d.get("prompt_tokens_total", counted)
    return {"requests": requests, "tokens_each": counted // requests, "wall_s": round(wall, 3),
            "prompt_tokens": prompt, "prefill_tokens_per_s": round(prompt / wall, 1),
            "cached": d.get("prompt_tokens_cached_total")}


REVIEWS: dict[str, dict[str, object]] = {
    "defaults": {}, "t0": {"temperature": 0.0},
    "fixed512": {"temperature": 0.0, "max_output_tokens": 512},
    "noverify": {"verify": False}, "noverify_t0": {"verify": False, "temperature": 0.0},
    "fixed512_noverify": {"verify": False, "temperature": 0.0, "max_output_tokens": 512},
}


def review_settings(name: str) -> dict[str, object]:
    if name.startswith("unit"):  # unit16384, unit16384_noverify
        size, _, rest = name.removeprefix("unit").partition("_")
        return {"chunk_tokens": int(size), **REVIEWS.get(rest, {})}
    return REVIEWS[name]


def stop(payload: Path) -> None:
    pid_file = payload / "vllm.pid"
    if not pid_file.exists():
        return
    try:
        os.killpg(int(pid_file.read_text()), signal.SIGTERM)
    except (ProcessLookupError, ValueError):
        pass
    pid_file.unlink()
    for _ in range(60):  # until the GPU memory is given back
        used = g.sh("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits")
        if used.strip().isdigit() and int(used) < 2000:
            return
        time.sleep(1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--payload", type=Path, default=Path("/tmp/payload"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/gpu-serving")))
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--max-model-len", type=int, default=65536)
    ap.add_argument("--configs", default="8192:256", help="BATCHED:SEQS[,…]; 0 = vLLM's default")
    ap.add_argument("--prefill-requests", type=int, default=24)
    ap.add_argument("--prefill-tokens", type=int, default=16000)
    ap.add_argument("--diff", type=Path, default=None)
    ap.add_argument("--reviews", default="defaults")
    ap.add_argument("--deadline", type=float, default=570)
    ap.add_argument("--url", help="measure this running server (no install, start or stop)")
    ap.add_argument("--served-name", default=g.SERVED)
    ap.add_argument("--keep-last", action="store_true", help="leave the last server running")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    begin = time.monotonic()
    g.SERVED = args.served_name
    result: dict[str, Any] = {"configs": []}
    if not args.url:
        result["install"] = g.install(args.payload)
    g.reviewbot_importable()
    from reviewbot.errors import ReviewbotError
    url = args.url or f"http://127.0.0.1:{args.port}"
    raw = args.diff.read_bytes() if args.diff else b""
    configs = args.configs.split(",")
    for n, spec in enumerate(configs):
        batched, seqs = (int(x) for x in spec.split(":"))
        extra: tuple[str, ...] = ()
        if batched:
            extra += ("--max-num-batched-tokens", str(batched))
        if seqs:
            extra += ("--max-num-seqs", str(seqs))
        vlog = args.payload / f"vllm-{batched}-{seqs}.log"
        entry: dict[str, Any] = {"max_num_batched_tokens": batched, "max_num_seqs": seqs}
        result["configs"].append(entry)
        try:
            if not args.url:
                entry["server"] = g.start_server(args.payload, args.port, args.max_model_len,
                                                 vlog, 420, extra)
                entry["log"] = read_log(vlog.read_text(errors="replace"))
            g.warmup(url)
            entry["prefill"] = prefill(url, args.prefill_requests, args.prefill_tokens)
            g.log(spec, "prefill", entry["prefill"])
            for name in filter(None, args.reviews.split(",")):
                if time.monotonic() - begin > args.deadline - 90:
                    entry.setdefault("skipped", []).append(name)
                    continue
                try:
                    run = g.bot_run(url, raw, 8, **review_settings(name))
                except ReviewbotError as exc:  # a refused review is a result: record, go on
                    entry.setdefault("reviews", {})[name] = {"error": str(exc)}
                    continue
                run.pop("stats", None)
                entry.setdefault("reviews", {})[name] = run
                (args.out / "gpu_serving.json").write_text(json.dumps(result, indent=1,
                                                                      default=str))
                g.log(spec, name, {k: run[k] for k in ("wall_s", "chunks", "requests",
                                                       "prompt_tokens", "completion_tokens")})
        except (RuntimeError, OSError, ImportError) as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
            g.log(spec, "failed:", exc)
        finally:
            if vlog.exists():
                (args.out / vlog.name).write_text(vlog.read_text(errors="replace")[-200_000:])
            (args.out / "gpu_serving.json").write_text(json.dumps(result, indent=1, default=str))
            if not args.url and not (args.keep_last and n == len(configs) - 1):
                stop(args.payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
