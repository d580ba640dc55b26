"""Backend ceiling vs the bot, in one run (issue 6, item 1).

Against one vLLM server:
  (a) the bot's review, `make_engine(settings).review(changes)`: wall time and the bot's own
      CPU time (`time.process_time()` of this process: parse, filter, chunk, the client's JSON
      work, tool-call parsing, merging), reported as a share of the wall time;
  (b) a replay of exactly the requests the bot sent (the raw JSON bodies, recorded by an httpx
      event hook on the bot's own HTTP client: messages, tools, tool_choice, max_tokens,
      temperature) from a minimal thread pool at the same concurrency: the backend's ceiling;
  (c) vLLM `/metrics` read before and after each phase: prompt and generation tokens, prefix
      cache hits/queries, TTFT (mean, p50/p95 estimated from the histogram buckets), generation
      tokens/s.

Prefix cache: a per-run random nonce line is put at the top of the system prompt of BOTH phases,
a different one per phase (the bot's engine gets it through its cached `system_prompt`; the
replay swaps it in the recorded bodies), so the replay cannot reuse KV blocks the bot's run left
behind and neither phase reuses an earlier run's; hits inside a phase (the shared system prompt
and tool prefix across chunks) count as they would in production.

    python benchmarks/ceiling.py --base-url http://127.0.0.1:8000/v1 --synthetic-lines 4000
    python benchmarks/ceiling.py --start-cpu-tiny-qwen --synthetic-lines 4000 --concurrency 8 \
        --max-context 8192 --output json

`--start-cpu-tiny-qwen` builds the Qwen-tokenizer tiny model (benchmarks/qwen_tokenizer.py)
under --model-dir and serves it with the CPU vLLM ($REVIEWBOT_VLLM_PYTHON) using
server/reviewbot_server/tinymodel.py's SERVE_ENV / SERVE_ARGS. `--serve-only INFO.json` just starts that server,
writes its URL to INFO.json and waits for SIGTERM (pragent_side_by_side.py shares it).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import math
import os
import pstats
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.append(str(ROOT))  # after $PYTHONPATH: a pinned snapshot of the code can win

from reviewbot import diff as diffmod
from reviewbot.choices import FindingsFormat
from reviewbot.config import Settings
from reviewbot.engine.build import make_engine

DEFAULT_MODEL_DIR = Path(tempfile.gettempdir()) / "reviewbot-qwen-tiny"

# -- a realistic, deterministic multi-file diff -------------------------------------------------


def synthetic_trees(lines: int, seed: int = 6) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Two source trees whose diff is release-like and about `lines` lines long (cut at a file
    boundary): Python and JS modules from benchmarks/chunking.py's seeded generators, ~15% of
    lines rewritten/inserted/deleted in clusters, a few added files. Deterministic."""
    import chunking as gen  # benchmarks/chunking.py

    rng = random.Random(seed)
    old: dict[str, bytes] = {}
    new: dict[str, bytes] = {}
    n_files = max(4, lines // 60)
    for i in range(n_files):
        pkg = f"src/{rng.choice(gen.WORDS)}/{rng.choice(gen.WORDS)}"
        if i % 4 == 3:
            path = f"web/{rng.choice(gen.WORDS)}/{gen._ident(rng)}_{i}.js"
            body = gen.js_module(rng, rng.randint(10, 30))
        else:
            path = f"{pkg}/{gen._ident(rng)}_{i}.py"
            body = gen.python_module(rng, rng.randint(10, 30))
        if i % 29 == 5:
            new[path] = ("\n".join(body) + "\n").encode()
            continue
        old[path] = ("\n".join(body) + "\n").encode()
        new[path] = ("\n".join(gen.mutate(rng, body, 0.15)) + "\n").encode()
    raw = gen.range_diff(old, new)
    keep: set[str] = set()
    count = 0
    for part in re.split(rb"(?m)^(?=diff --git )", raw):
        m = re.match(rb"diff --git a/(\S+) b/(\S+)", part)
        if not m:
            continue
        if count and count + part.count(b"\n") > lines:
            break
        keep.update(x.decode() for x in m.groups())
        count += part.count(b"\n")
    return (
        {k: v for k, v in old.items() if k in keep},
        {k: v for k, v in new.items() if k in keep},
    )


def synthetic_diff(lines: int, seed: int = 6) -> bytes:
    import chunking as gen  # benchmarks/chunking.py

    return gen.range_diff(*synthetic_trees(lines, seed))


# -- vLLM /metrics ----------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def scrape(root_url: str) -> dict[str, Any]:
    """Counters summed over label sets; histogram buckets by `le`."""
    text = httpx.get(f"{root_url}/metrics", timeout=30).text
    sums: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name.endswith("_bucket"):
            le = re.search(r'le="([^"]+)"', labels)
            if le:
                b = buckets.setdefault(name[: -len("_bucket")], {})
                bound = math.inf if le.group(1) == "+Inf" else float(le.group(1))
                b[bound] = b.get(bound, 0.0) + value
            continue
        sums[name] = sums.get(name, 0.0) + value
    return {"sums": sums, "buckets": buckets, "t": time.monotonic()}


def _counter(snap: dict[str, Any], *names: str) -> float | None:
    for name in names:
        for key in (name, name + "_total"):
            if key in snap["sums"]:
                return snap["sums"][key]
    return None


def _delta(before: dict[str, Any], after: dict[str, Any], *names: str) -> float | None:
    a, b = _counter(after, *names), _counter(before, *names)
    return None if a is None or b is None else a - b


def _quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus-style histogram_quantile on cumulative (bound, count) pairs."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    prev_bound, prev_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return prev_bound
            if count == prev_count:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / (count - prev_count)
        prev_bound, prev_count = bound, count
    return prev_bound


def metrics_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    hits = _delta(before, after, "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits")
    queries = _delta(before, after, "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries")
    gen = _delta(before, after, "vllm:generation_tokens")
    name = "vllm:time_to_first_token_seconds"
    b0, b1 = before["buckets"].get(name, {}), after["buckets"].get(name, {})
    cum = sorted((le, b1[le] - b0.get(le, 0.0)) for le in b1)
    t_sum = _delta(before, after, name + "_sum")
    t_cnt = _delta(before, after, name + "_count")
    seconds = after["t"] - before["t"]
    return {
        "seconds": seconds,
        "ttft_sum": t_sum,
        "ttft_count": t_cnt,
        "ttft_buckets": cum,
        "prompt_tokens": _delta(before, after, "vllm:prompt_tokens"),
        "generation_tokens": gen,
        "requests_finished": _delta(before, after, "vllm:request_success"),
        "prefix_cache_hits": hits,
        "prefix_cache_queries": queries,
        "prefix_cache_hit_rate": (hits / queries) if hits is not None and queries else None,
        "ttft_mean_s": (t_sum / t_cnt) if t_sum is not None and t_cnt else None,
        "ttft_p50_s": _quantile(cum, 0.50),
        "ttft_p95_s": _quantile(cum, 0.95),
        "generation_tokens_per_s": (gen / seconds) if gen is not None and seconds > 0 else None,
        "preemptions": _delta(before, after, "vllm:num_preemptions"),
    }


# -- serving the tiny Qwen-tokenizer model ------------------------------------------------------


def ensure_tiny_qwen(model_dir: Path) -> Path:
    if not (model_dir / "tokenizer.json").is_file() or not (model_dir / "config.json").is_file():
        import qwen_tokenizer  # benchmarks/qwen_tokenizer.py

        qwen_tokenizer.main([str(model_dir), "--config", "tiny"])
    return model_dir


@contextlib.contextmanager
def serve_tiny_qwen(
    model_dir: Path, max_model_len: int, log_path: Path, kv_gib: int = 2
) -> Iterator[str]:
    """Start the CPU vLLM on the tiny Qwen-tokenizer model; yield its /v1 base URL."""
    from reviewbot_server.process.launcher import LaunchSpec, VllmProcess, cpu_dtype, free_port
    from reviewbot_server.tinymodel import SERVE_ARGS, SERVE_ENV

    ensure_tiny_qwen(model_dir)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_gib))
    spec = LaunchSpec(
        model_dir=model_dir,
        port=free_port(),
        served_model_name="qwen-tiny",
        max_model_len=max_model_len,
        dtype=cpu_dtype(),
        env=SERVE_ENV,
        extra_args=SERVE_ARGS,
    )
    started = time.monotonic()
    with VllmProcess(spec, log_path=log_path, startup_timeout=900):
        print(
            f"vLLM up at {spec.root_url} in {time.monotonic() - started:.0f} s (log {log_path})",
            file=sys.stderr,
            flush=True,
        )
        yield f"{spec.root_url}/v1"


# -- the two phases -------------------------------------------------------------------------------


@dataclass
class Recorded:
    t: float
    body: bytes


@dataclass
class Phase:
    name: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    requests: int = 0
    prompt_tokens_usage: int = 0
    completion_tokens_usage: int = 0
    errors: int = 0
    first_request_s: float | None = None  # from phase start to the first chat request
    metrics: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["cpu_share_of_wall"] = self.cpu_s / self.wall_s if self.wall_s else None
        return d


def _nonce_line(nonce: str) -> str:
    return f"[benchmark run {nonce}]\n"


def _tag_tool(tool: dict[str, Any], nonce: str) -> dict[str, Any]:
    """The tool with the nonce in its parameters' description: a new schema string, so vLLM's
    structured-output backend compiles its grammar afresh instead of hitting its cache."""
    tool = json.loads(json.dumps(tool))
    params = tool["function"]["parameters"]
    params["description"] = f"{params.get('description', '')} [{nonce}]".strip()
    return tool


def run_bot(
    settings: Settings,
    changes: diffmod.ChangeSet,
    nonce: str,
    root_url: str,
    profile: str | None,
    grammar_nonce: bool,
) -> tuple[Phase, list[Recorded], Any]:
    phase = Phase("bot")
    recorded: list[Recorded] = []
    lock = threading.Lock()
    before = scrape(root_url)
    cpu0, t0 = time.process_time(), time.monotonic()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    engine = make_engine(settings)
    split: dict[str, float] = {
        "make_engine_cpu_s": time.process_time() - cpu0,
        "make_engine_wall_s": time.monotonic() - t0,
    }
    plain_chunks = engine.fitting.chunks

    def chunks(changes: Any, title: str) -> Any:  # timed: filter and chunk run before it
        c0, w0 = time.process_time(), time.monotonic()
        try:
            return plain_chunks(changes, title)
        finally:
            split["chunks_cpu_s"] = time.process_time() - c0
            split["chunks_wall_s"] = time.monotonic() - w0

    engine.fitting.chunks = chunks  # type: ignore[method-assign]
    # the per-run nonce, at the top of the (cached, identical-for-all-chunks) system prompt
    engine.requests.__dict__["system_prompt"] = _nonce_line(nonce) + engine.requests.system_prompt
    if grammar_nonce:
        plain_request = engine.requests.request

        def request(
            chunk: Any, total: int, title: str
        ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            messages, tool_list = plain_request(chunk, total, title)
            return messages, [_tag_tool(tool, nonce) for tool in tool_list]

        engine.requests.request = request  # type: ignore[method-assign]  # chunks() counts with it too

    def hook(request: httpx.Request) -> None:
        if request.method == "POST" and request.url.path.endswith("/chat/completions"):
            with lock:
                recorded.append(Recorded(time.monotonic() - t0, bytes(request.read())))

    http = engine.client._client._client  # openai.OpenAI -> its httpx.Client
    http.event_hooks["request"] = [*http.event_hooks.get("request", []), hook]
    result = engine.review(changes)
    if prof:
        prof.disable()
    phase.wall_s = time.monotonic() - t0
    phase.cpu_s = time.process_time() - cpu0
    after = scrape(root_url)
    phase.metrics = metrics_delta(before, after)
    st = result.stats
    phase.requests = st.requests
    phase.prompt_tokens_usage = st.usage.prompt_tokens
    phase.completion_tokens_usage = st.usage.completion_tokens
    phase.errors = len(st.errors)
    phase.first_request_s = min((r.t for r in recorded), default=None)
    sends = [r.t for r in recorded]
    phase.extra = {
        "model": engine.model,
        "context": engine.context,
        "chunks": st.chunks,
        "changed_lines": st.changed_lines,
        "changed_lines_sent": st.changed_lines_sent,
        "files_reviewed": st.files_reviewed,
        "files_total": st.files_total,
        "findings": len(result.findings),
        "tool_calls_invalid": st.tool_calls_invalid,
        "error_samples": st.errors[:3],
        "requests_recorded": len(recorded),
        # all chunks in flight at once when chunks <= concurrency: the spread is ~0
        "send_spread_s": (max(sends) - min(sends)) if sends else None,
        # where the bot's own CPU goes: model discovery and clients, chunking with its exact
        # /tokenize counts; the rest is requests (client threads) and post-processing
        **split,
    }
    if prof:
        prof.dump_stats(profile)
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
        phase.extra["profile_top"] = s.getvalue()
    return phase, recorded, result


def run_replay(
    base_url: str, root_url: str, bodies: list[bytes], concurrency: int, api_key: str | None
) -> Phase:
    phase = Phase("replay")
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    limits = httpx.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency)
    client = httpx.Client(timeout=600, headers=headers, limits=limits)
    lock = threading.Lock()
    before = scrape(root_url)
    cpu0, t0 = time.process_time(), time.monotonic()

    def one(body: bytes) -> None:
        r = client.post(f"{base_url}/chat/completions", content=body)
        with lock:
            phase.requests += 1
            if r.status_code != 200:
                phase.errors += 1
                return
            usage = r.json().get("usage") or {}
            phase.prompt_tokens_usage += usage.get("prompt_tokens", 0)
            phase.completion_tokens_usage += usage.get("completion_tokens", 0)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, bodies))
    phase.wall_s = time.monotonic() - t0
    phase.cpu_s = time.process_time() - cpu0
    phase.first_request_s = 0.0
    phase.metrics = metrics_delta(before, scrape(root_url))
    client.close()
    return phase


def swap_nonce(body: bytes, old: str, new: str) -> bytes:
    data = json.loads(body)
    for msg in data["messages"]:
        if msg.get("role") == "system" and isinstance(msg.get("content"), str):
            msg["content"] = msg["content"].replace(_nonce_line(old), _nonce_line(new), 1)
    for tool in data.get("tools", []):
        params = tool.get("function", {}).get("parameters", {})
        if isinstance(params.get("description"), str):
            params["description"] = params["description"].replace(f"[{old}]", f"[{new}]")
    return json.dumps(data).encode()


# -- reporting ----------------------------------------------------------------------------------


def _fmt(v: Any, spec: str = ".2f") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def table(report: dict[str, Any]) -> str:
    bot, rep = report["bot"], report["replay"]
    rows = [
        ("wall s", bot["wall_s"], rep["wall_s"]),
        ("process CPU s", bot["cpu_s"], rep["cpu_s"]),
        ("CPU % of wall", 100 * bot["cpu_share_of_wall"], 100 * rep["cpu_share_of_wall"]),
        ("first chat request at s", bot["first_request_s"], rep["first_request_s"]),
        ("requests", bot["requests"], rep["requests"]),
        ("errors", bot["errors"], rep["errors"]),
        ("prompt tokens (usage)", bot["prompt_tokens_usage"], rep["prompt_tokens_usage"]),
        (
            "completion tokens (usage)",
            bot["completion_tokens_usage"],
            rep["completion_tokens_usage"],
        ),
    ]
    for key, label in [
        ("prompt_tokens", "prompt tokens (/metrics)"),
        ("generation_tokens", "generation tokens (/metrics)"),
        ("prefix_cache_hits", "prefix cache hits"),
        ("prefix_cache_queries", "prefix cache queries"),
        ("prefix_cache_hit_rate", "prefix cache hit rate"),
        ("ttft_mean_s", "TTFT mean s"),
        ("ttft_p50_s", "TTFT p50 s (buckets)"),
        ("ttft_p95_s", "TTFT p95 s (buckets)"),
        ("generation_tokens_per_s", "generation tokens/s"),
        ("preemptions", "preemptions"),
    ]:
        rows.append((label, bot["metrics"].get(key), rep["metrics"].get(key)))
    out = [f"| {'':30} | {'bot':>12} | {'replay':>12} |", f"|{'-' * 32}|{'-' * 14}|{'-' * 14}|"]
    for label, a, b in rows:
        out.append(f"| {label:30} | {_fmt(a):>12} | {_fmt(b):>12} |")
    r = report["ratios"]
    out.append("")
    for b, p in zip(report["bot_phases"], report["replay_phases"], strict=False):
        out.append(
            f"pair: bot {b['wall_s']:.1f} s ({b['completion_tokens_usage']} generated, first request at "
            f"{b['first_request_s']:.2f} s, sends spread {b['extra'].get('send_spread_s') or 0:.2f} s, "
            f"CPU {100 * b['cpu_share_of_wall']:.2f}% of wall = {b['cpu_s']:.2f} s: make_engine "
            f"{b['extra'].get('make_engine_cpu_s', 0):.2f}, chunks {b['extra'].get('chunks_cpu_s', 0):.2f}"
            f" (wall {b['extra'].get('chunks_wall_s', 0):.2f}){', profiled' if 'profile_top' in b['extra'] else ''})"
            f" / replay {p['wall_s']:.1f} s ({p['completion_tokens_usage']} generated)"
        )
    out.append(
        f"bot wall / replay wall = {r['wall_ratio']:.3f} (target <= 1.25: "
        f"{'met' if r['wall_ratio'] <= 1.25 else 'MISSED'}); bot CPU = "
        f"{100 * r['bot_cpu_share']:.2f}% of wall (target <= 2%: "
        f"{'met' if r['bot_cpu_share'] <= 0.02 else 'MISSED'})"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", help="the OpenAI-compatible /v1 URL of a running vLLM")
    ap.add_argument("--model", help="served model name (default: the first served)")
    ap.add_argument("--api-key")
    ap.add_argument(
        "--start-cpu-tiny-qwen",
        action="store_true",
        help="launch the CPU vLLM with the Qwen-tokenizer tiny model",
    )
    ap.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    ap.add_argument("--max-model-len", type=int, default=65536)
    ap.add_argument(
        "--serve-only", metavar="INFO_JSON", help="start the server, write its URL, wait"
    )
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--diff", type=Path, help="a unified diff file")
    src.add_argument("--synthetic-lines", type=int, help="generate a diff of about N lines")
    ap.add_argument("--concurrency", type=int, default=Settings.concurrency)
    ap.add_argument("--replay-concurrency", type=int, help="default: --concurrency")
    ap.add_argument("--max-context", type=int, default=Settings.max_context)
    ap.add_argument("--max-output-tokens", type=int, default=Settings.max_output_tokens)
    ap.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="bot/replay pairs; the first records, later ones alternate the order",
    )
    ap.add_argument(
        "--no-grammar-nonce",
        dest="grammar_nonce",
        action="store_false",
        help="leave the tool schemas alone (the replay then reuses the grammars "
        "vLLM compiled during the bot's phase)",
    )
    ap.add_argument("--profile", metavar="PATH", help="cProfile the bot phase (main thread)")
    ap.add_argument("--output", choices=("text", "json"), default="text")
    ap.add_argument("--log", type=Path, default=Path(tempfile.gettempdir()) / "ceiling-vllm.log")
    args = ap.parse_args(argv)

    if args.serve_only:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        with serve_tiny_qwen(args.model_dir, args.max_model_len, args.log) as base_url:
            Path(args.serve_only).write_text(json.dumps({"base_url": base_url}))
            stop.wait()
        return 0
    if not args.diff and not args.synthetic_lines:
        ap.error("give --diff PATH or --synthetic-lines N")
    if not args.base_url and not args.start_cpu_tiny_qwen:
        ap.error("give --base-url or --start-cpu-tiny-qwen")

    raw = args.diff.read_bytes() if args.diff else synthetic_diff(args.synthetic_lines)
    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(
            serve_tiny_qwen(args.model_dir, args.max_model_len, args.log)
        )
        report = measure(args, base_url.rstrip("/"), raw)
    if args.output == "json":
        print(json.dumps(report, indent=2, default=str))
    else:
        print(report["header"])
        print(table(report))
        if report["bot"]["extra"].get("profile_top"):
            print(report["bot"]["extra"]["profile_top"])
    return 0


def combine(name: str, phases: list[Phase]) -> Phase:
    """Sums over phases; rates and TTFT recomputed from the summed counters and buckets."""
    out = Phase(name)
    for ph in phases:
        out.wall_s += ph.wall_s
        out.cpu_s += ph.cpu_s
        out.requests += ph.requests
        out.prompt_tokens_usage += ph.prompt_tokens_usage
        out.completion_tokens_usage += ph.completion_tokens_usage
        out.errors += ph.errors
        out.first_request_s = (out.first_request_s or 0.0) + (ph.first_request_s or 0.0)
    keys = (
        "prompt_tokens",
        "generation_tokens",
        "requests_finished",
        "prefix_cache_hits",
        "prefix_cache_queries",
        "preemptions",
        "seconds",
        "ttft_sum",
        "ttft_count",
    )
    m: dict[str, Any] = {}
    for k in keys:
        vals = [ph.metrics.get(k) for ph in phases]
        m[k] = None if any(v is None for v in vals) else sum(vals)
    buckets: dict[float, float] = {}
    for ph in phases:
        for le, n in ph.metrics.get("ttft_buckets") or []:
            buckets[le] = buckets.get(le, 0.0) + n
    cum = sorted(buckets.items())
    m["prefix_cache_hit_rate"] = (
        m["prefix_cache_hits"] / m["prefix_cache_queries"]
        if m["prefix_cache_hits"] is not None and m["prefix_cache_queries"]
        else None
    )
    m["ttft_mean_s"] = (
        m["ttft_sum"] / m["ttft_count"] if m["ttft_sum"] is not None and m["ttft_count"] else None
    )
    m["ttft_p50_s"] = _quantile(cum, 0.5)
    m["ttft_p95_s"] = _quantile(cum, 0.95)
    m["generation_tokens_per_s"] = (
        m["generation_tokens"] / m["seconds"]
        if m["generation_tokens"] is not None and m["seconds"]
        else None
    )
    out.metrics = m
    return out


def measure(args: argparse.Namespace, base_url: str, raw: bytes) -> dict[str, Any]:
    root_url = base_url.removesuffix("/v1")
    settings = Settings(
        base_url=base_url,
        model=args.model,
        api_key=args.api_key,
        concurrency=args.concurrency,
        max_context=args.max_context,
        max_output_tokens=args.max_output_tokens,
        findings_format=FindingsFormat.TOOL,  # random weights answer only under its grammar
    )
    cpu0 = time.process_time()
    changes = diffmod.parse(raw)
    parse_cpu = time.process_time() - cpu0
    run_id = uuid.uuid4().hex[:12]
    replay_conc = args.replay_concurrency or args.concurrency
    bots: list[Phase] = []
    replays: list[Phase] = []
    sequence: list[str] = []
    recorded: list[Recorded] = []
    rec_nonce = ""
    for i in range(args.pairs):
        # pair 1 records (bot first); then the order alternates: replay-bot, bot-replay, ...
        for which in ("bot", "replay") if i % 2 == 0 else ("replay", "bot"):
            nonce = f"{run_id}-{which}{i + 1}"
            sequence.append(which)
            if which == "bot":
                ph, rec, _ = run_bot(
                    settings,
                    changes,
                    nonce,
                    root_url,
                    args.profile if i == 0 else None,
                    args.grammar_nonce,
                )
                ph.cpu_s += parse_cpu  # parsing the diff is the bot's work too (and
                ph.wall_s += parse_cpu  # single-threaded: its wall time is its CPU time)
                bots.append(ph)
                if not recorded:
                    recorded, rec_nonce = rec, nonce
                print(
                    f"bot {i + 1}: {ph.wall_s:.1f} s, {ph.completion_tokens_usage} generated",
                    file=sys.stderr,
                    flush=True,
                )
            else:
                bodies = [swap_nonce(r.body, rec_nonce, nonce) for r in recorded]
                ph = run_replay(base_url, root_url, bodies, replay_conc, args.api_key)
                replays.append(ph)
                print(
                    f"replay {i + 1}: {ph.wall_s:.1f} s, {ph.completion_tokens_usage} generated",
                    file=sys.stderr,
                    flush=True,
                )
    bot, replay = combine("bot", bots), combine("replay", replays)
    first = bots[0]
    sample = json.loads(recorded[0].body) if recorded else {}
    n_lines = raw.count(b"\n")
    header = (
        f"diff: {len(raw):,} bytes, {n_lines:,} lines; model {first.extra['model']} at "
        f"{base_url}; context {first.extra['context']}, max_tokens {args.max_output_tokens}, "
        f"concurrency bot {args.concurrency} / replay {replay_conc}; {args.pairs} pair(s), "
        f"order {' '.join(sequence)}; a fresh nonce per phase in the system prompt"
        f"{' and the tool schema' if args.grammar_nonce else ''}; chunks {first.extra['chunks']}; "
        f"changed lines sent {first.extra['changed_lines_sent']}/{first.extra['changed_lines']}"
    )
    return {
        "header": header,
        "diff_bytes": len(raw),
        "diff_lines": n_lines,
        "parse_cpu_s": parse_cpu,
        "request_keys": sorted(sample),
        "tool_choice": sample.get("tool_choice"),
        "max_tokens": sample.get("max_tokens"),
        "sequence": sequence,
        "bot": bot.to_dict(),
        "replay": replay.to_dict(),
        "bot_phases": [p.to_dict() for p in bots],
        "replay_phases": [p.to_dict() for p in replays],
        "ratios": {
            "wall_ratio": bot.wall_s / replay.wall_s if replay.wall_s else math.inf,
            "bot_cpu_share": bot.cpu_s / bot.wall_s if bot.wall_s else 0.0,
            "per_pair_wall_ratio": [
                b.wall_s / r.wall_s for b, r in zip(bots, replays, strict=False)
            ],
            # the part of the gap that is the bot's own pre-request work (parse+filter+chunk,
            # incl. its /tokenize round trips), summed over its phases
            "bot_pre_request_s": sum(b.first_request_s or 0.0 for b in bots),
        },
    }


if __name__ == "__main__":
    sys.exit(main())
