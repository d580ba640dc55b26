"""The real GPU run (issue 6, item 3): vLLM 0.26.0 on one H200, the bot against it, and the ceiling.

Runs ON the device machine, from the repository root of the working-tree copy, after the payload
that benchmarks/gpu_payload.py built has been unpacked to --payload (default /tmp/payload):

    cat gpu-payload/payload.tar.xz.* | xz -d | tar -x -C /tmp/payload
    python3 benchmarks/gpu_run.py --payload /tmp/payload --out $OUT

What it does, in one process, everything it sees written to --out as JSON:
1. installs the carried wheels offline (`pip install --no-index --no-deps --target`), records
   versions (torch, vllm, GPU, driver);
2. starts vLLM in a new session (so a later call on a still-warm machine can reuse it with
   --reuse) with a Qwen3-Coder-30B-A3B-shaped model and random weights (--load-format dummy),
   waits for /v1/models;
3. for the ~1,000-line and the ~25k-line diff and each --concurrency: resets the prefix cache
   (dev endpoint), runs the bot (`make_engine(resolve(...)).review(changes)`) and records wall
   time, CPU time, chunks, tokens, tokens/s, reviews/hour and stats.complete, plus the /metrics
   deltas of that run (prompt tokens, prefix-cache hits/queries, TTFT histogram);
4. the ceiling, in the same server: the exact requests of the review (`engine.fitting.chunks` +
   `engine.requests.request`) replayed all at once (concurrency = number of chunks) with the same forced
   tool choice, max_tokens and temperature, after a prefix-cache reset; its wall time and
   metrics deltas, and the bot/ceiling ratio;
5. optionally (--parallel large:4,small:16), several reviews of the same diff at once, each with
   a distinct title, for the box's throughput rather than one review's latency;
6. the tail of the vLLM log.

Only reviewbot (from the working tree), openai and httpx are used on the client side.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVED = "qwen3-coder"
SERVE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_USE_FLASHINFER_SAMPLER": "0",  # FlashInfer is not carried
    # named tool choice through the JSON-schema path (not qwen3_coder's structural tag)
    "VLLM_ENFORCE_STRICT_TOOL_CALLING": "0",
    "VLLM_SERVER_DEV_MODE": "1",  # for POST /reset_prefix_cache between measured runs
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def serve_args(model: str, port: int, max_len: int) -> list[str]:
    return [
        "--model", model, "--port", str(port), "--host", "127.0.0.1",
        "--load-format", "dummy", "--max-model-len", str(max_len),
        "--served-model-name", SERVED, "--enable-auto-tool-choice",
        "--tool-call-parser", "qwen3_coder", "--gpu-memory-utilization", "0.9",
        "--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}',
        "--enable-prompt-tokens-details",  # usage.prompt_tokens_details.cached_tokens
    ]


OUT: Path = Path(".")
TEMPERATURE: float | None = None  # None: reviewbot's default (0.1)
SETTINGS: dict[str, object] = {}  # --max-context, --exclude: for every review of the run
RESULT: dict[str, Any] = {}


def save() -> None:
    (OUT / "gpu_run.json").write_text(json.dumps(RESULT, indent=1, default=str) + "\n")


def log(*parts: object) -> None:
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


def sh(cmd: str, timeout: float = 120) -> str:
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout, check=False)
    return (p.stdout + p.stderr).strip()


# -- install and environment ------------------------------------------------------------------

def install(payload: Path) -> dict[str, Any]:
    deps = payload / "deps"
    t0 = time.monotonic()
    if not (deps / ".done").exists():
        wheels = sorted(str(p) for p in (payload / "wheels").glob("*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--no-compile", "--no-cache-dir", "--upgrade", "--target", str(deps),
                        *wheels], check=True)
        (deps / ".done").write_text("ok\n")
    # the client from the working tree, and the server package beside it (server/)
    paths = [str(payload / "site"), str(deps), str(ROOT), str(ROOT / "server")]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for p in reversed(paths):
        sys.path.insert(0, p)
    return {"install_seconds": round(time.monotonic() - t0, 1),
            "wheels": len(list((payload / "wheels").glob("*.whl")))}


def environment(payload: Path) -> dict[str, Any]:
    env = {
        "python": sys.version.split()[0], "platform": platform.platform(),
        "nvidia_smi": sh("nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm "
                         "--format=csv,noheader"),
        "cuda_driver_nvidia_smi": sh("nvidia-smi | sed -n 3p"),
        "pip_show_torch": sh(f"{sys.executable} -m pip show torch 2>/dev/null | sed -n 1,2p"),
        "cpus": os.cpu_count(),
    }
    probe = ("import importlib.metadata as m, torch, vllm, transformers, triton, openai; "
             "print(torch.__version__, torch.version.cuda, vllm.__version__, transformers.__version__, "
             "triton.__version__, m.version(\"xgrammar\"), openai.__version__, "
             "torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))")
    env["versions"] = sh(f"{sys.executable} -c '{probe}'", timeout=300).splitlines()[-1:]
    return env


PREFLIGHT_MODULES = (
    "torch", "triton", "transformers", "tokenizers", "fastapi", "uvicorn", "starlette", "pydantic",
    "openai", "httpx", "xgrammar", "llguidance", "outlines_core", "lmformatenforcer",
    "compressed_tensors", "mistral_common", "openai_harmony", "zmq", "msgspec", "cbor2", "ijson",
    "pybase64", "blake3", "partial_json_parser", "prometheus_fastapi_instrumentator",
    "prometheus_client", "model_hosting_container_standards", "depyf", "watchfiles",
    "setproctitle", "cachetools", "unidiff", "jinja2", "rich", "numba", "cv2", "tiktoken",
    "sentencepiece", "gguf", "psutil", "aiohttp", "anthropic", "mcp", "tvm_ffi", "vllm")


def preflight() -> dict[str, Any]:
    """Import each module (one interpreter, in order): which are missing or broken, before the run."""
    code = ("import importlib, json, sys\nout = {}\nfor mod in sys.argv[1:]:\n"
            "    try:\n        x = importlib.import_module(mod)\n"
            "        out[mod] = str(getattr(x, '__version__', '?')) + ' ' + str(getattr(x, '__file__', ''))\n"
            "    except BaseException as exc:\n        out[mod] = 'FAIL ' + type(exc).__name__ + ': ' + str(exc)[:300]\n"
            "print(json.dumps(out))\n")
    p = subprocess.run([sys.executable, "-c", code, *PREFLIGHT_MODULES], capture_output=True,
                       text=True, timeout=400, check=False)
    try:
        out: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        out = {"error": (p.stdout + p.stderr)[-3000:]}
    out["pip_list"] = sh(f"{sys.executable} -m pip list --format=freeze 2>/dev/null | grep -iE "
                         "'^(torch|triton|transformers|tokenizers|numpy|numba|protobuf|aiohttp|"
                         "setuptools|prometheus.client|pillow|huggingface.hub|typing.extensions|"
                         "opencv.python.headless|tiktoken|safetensors|pyyaml|regex)=='")
    return out


# -- the server -------------------------------------------------------------------------------

def server_up(url: str) -> bool:
    import httpx
    try:
        return httpx.get(url + "/v1/models", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


STARTED: list[int] = []  # the vLLM sessions this process started: only these are stopped


def start_server(payload: Path, port: int, max_len: int, log_path: Path, limit: float,
                 extra: tuple[str, ...] = ()) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}"
    if server_up(url):
        return {"reused": True}
    env = {**os.environ, **SERVE_ENV}
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            *serve_args(str(payload / "model"), port, max_len), *extra]
    log("serve:", " ".join(argv))
    t0 = time.monotonic()
    with open(log_path, "ab") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd="/tmp")
    (payload / "vllm.pid").write_text(str(proc.pid))
    STARTED.append(proc.pid)
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited with {proc.returncode} during startup; see vllm.log")
        if server_up(url):
            return {"reused": False, "startup_seconds": round(time.monotonic() - t0, 1),
                    "argv": argv[1:], "env": SERVE_ENV}
        time.sleep(2)
    raise RuntimeError(f"vLLM not up after {limit:.0f} s; see vllm.log")


def metrics(url: str) -> dict[str, Any]:
    """Counters summed over labels; histograms as {le: count} plus _sum and _count."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(url + "/metrics", timeout=30).text
    out: dict[str, Any] = {}
    for fam in text_string_to_metric_families(text):
        if not fam.name.startswith("vllm:"):
            continue
        for s in fam.samples:
            if s.name.endswith("_bucket"):
                b = out.setdefault(s.name, {})
                b[s.labels["le"]] = b.get(s.labels["le"], 0.0) + s.value
            elif s.name.endswith("_created"):
                continue
            elif fam.type in ("counter", "histogram", "gauge"):
                out[s.name] = out.get(s.name, 0.0) + s.value
            elif fam.type == "info" or s.name.endswith("_info"):
                out[s.name] = s.labels
    return out


KEYS = ("vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_cached_total",
        "vllm:time_to_first_token_seconds_sum", "vllm:time_to_first_token_seconds_count",
        "vllm:e2e_request_latency_seconds_sum", "vllm:e2e_request_latency_seconds_count",
        "vllm:request_queue_time_seconds_sum", "vllm:request_prefill_time_seconds_sum",
        "vllm:request_decode_time_seconds_sum", "vllm:num_preemptions_total",
        "vllm:inter_token_latency_seconds_sum", "vllm:inter_token_latency_seconds_count")


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k in KEYS:
        if k in after:
            d[k.removeprefix("vllm:")] = round(after[k] - before.get(k, 0.0), 4)
    q, h = d.get("prefix_cache_queries_total"), d.get("prefix_cache_hits_total")
    if q:
        d["prefix_cache_hit_rate"] = round((h or 0) / q, 4)
    n = d.get("time_to_first_token_seconds_count")
    if n:
        d["ttft_mean_s"] = round(d["time_to_first_token_seconds_sum"] / n, 3)
        buckets = {le: after["vllm:time_to_first_token_seconds_bucket"][le]
                   - before.get("vllm:time_to_first_token_seconds_bucket", {}).get(le, 0.0)
                   for le in after.get("vllm:time_to_first_token_seconds_bucket", {})}
        d["ttft_buckets"] = {le: c for le, c in sorted(buckets.items(), key=lambda kv: float(kv[0]))}
        for q_ in (0.5, 0.9, 0.99):  # upper bucket bound holding the quantile
            d[f"ttft_p{int(q_ * 100)}_le_s"] = next(
                (le for le, c in d["ttft_buckets"].items() if c >= q_ * n), "+Inf")
    n = d.get("e2e_request_latency_seconds_count")
    if n:
        d["e2e_mean_s"] = round(d["e2e_request_latency_seconds_sum"] / n, 3)
    return d


def reset_cache(url: str) -> bool:
    import httpx
    try:
        return httpx.post(url + "/reset_prefix_cache", timeout=60).status_code == 200
    except httpx.HTTPError:
        return False


def reviewbot_importable() -> str:
    """reviewbot from the working tree, not installed: map `reviewbot.prompts` to prompts/ as
    pyproject's package-dir does (templates load through importlib.resources)."""
    import importlib
    import importlib.util
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        importlib.import_module("reviewbot.prompts")
        return "installed"
    except ModuleNotFoundError:
        pass
    spec = importlib.util.spec_from_file_location(
        "reviewbot.prompts", ROOT / "prompts" / "__init__.py",
        submodule_search_locations=[str(ROOT / "prompts")])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["reviewbot.prompts"] = module
    spec.loader.exec_module(module)
    import reviewbot
    reviewbot.prompts = module  # type: ignore[attr-defined]
    return "from the working tree"


# -- the measurements -------------------------------------------------------------------------

def settings_for(url: str, concurrency: int, **extra: object):  # type: ignore[no-untyped-def]
    from reviewbot.config import resolve
    # random weights answer findings only under the forced call's grammar
    return resolve({"base_url": url + "/v1", "concurrency": concurrency, "model": SERVED,
                    "temperature": TEMPERATURE, "findings_format": "tool", **SETTINGS, **extra},
                   env={}, config_path="/dev/null")


class PassFailed(Exception):
    """A request of `passes` failed: the server's error, as text."""


def passes(url: str, raw: bytes, candidates: int = 8) -> dict[str, Any]:
    """The precision passes like for like: the review's finding requests all at once (one
    pass); the same with each chunk's verification request sent as soon as its finding answer
    is in (`candidates` findings per chunk, on its first changed rows); and the finding requests
    with n = 3 (samples). Run at temperature 0, the random model decodes every request to its
    max_tokens in all three, so the walls compare the same work. The findings cap is held at 8
    (2,048 reserved tokens, as in the earlier runs): with random weights a larger cap only
    makes every answer longer."""
    import openai

    from reviewbot import diff
    from reviewbot.context import Context
    from reviewbot.engine import filters
    from reviewbot.engine.build import make_engine
    from reviewbot.engine.tools import verify_schema
    from reviewbot.findings import Finding, Severity

    settings = settings_for(url, 8, max_findings_per_chunk=8)
    engine = make_engine(settings)
    reviewed, _ = filters.split(diff.parse(raw), settings.exclude)
    chunks = engine.fitting.chunks(reviewed, Context())
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", timeout=600, max_retries=0)
    temperature = TEMPERATURE if TEMPERATURE is not None else 0.0

    def call(messages: Any, tools: Any, name: str, max_tokens: int, n: int = 1,
             schema: Any = None) -> Any:
        # the verification's answer is guided by response_format, its tools only the prefix
        asked = ({"tool_choice": "none", "response_format": {"type": "json_schema", "json_schema": {
            "name": name, "schema": schema, "strict": True}}} if schema is not None else
                 {"tool_choice": {"type": "function", "function": {"name": name}}})
        try:
            return client.chat.completions.create(
                model=SERVED, messages=messages, tools=tools, n=n, **asked,
                # vLLM refuses n > 1 with greedy sampling: the samples get a near-greedy 0.01
                max_tokens=max_tokens,
                temperature=max(temperature, 0.01) if n > 1 else temperature)
        except openai.APIError as exc:
            raise PassFailed(f"{name}: {exc}") from None

    def finding(chunk: Any, n: int = 1) -> tuple[Any, Any, Any]:
        messages, tools = engine.requests.request(chunk, Context())
        return messages, tools, call(messages, tools, "report_findings",
                                     engine.requests.output_tokens(chunk.changed_lines), n)

    def both(chunk: Any) -> list[Any]:
        messages, tools, first = finding(chunk)
        rows = [r for r in chunk.rows().values() if r.line.changed][:candidates]
        found = [Finding(r.file.path, r.number, r.side, Severity.MAJOR, f"candidate {i}",
                         "The value may be None here and is used without a check.")
                 for i, r in enumerate(rows)]
        second = call(engine.requests.verify_messages(chunk, messages, found), tools,
                      "verify_findings", engine.requests.verify_tokens(len(found)),
                      schema=verify_schema(len(found)))
        return [first, second]

    out: dict[str, Any] = {"chunks": len(chunks), "candidates_per_chunk": candidates,
                           "temperature": temperature}
    for name, job in (("one pass", lambda c: [finding(c)[2]]), ("verify", both),
                      ("samples 3", lambda c: [finding(c, 3)[2]])):
        reset = reset_cache(url)
        m0 = metrics(url)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, len(chunks))) as pool:
            replies = [r for rs in pool.map(job, chunks) for r in rs]
        wall = time.monotonic() - t0
        out[name] = {
            "wall_s": round(wall, 3), "cache_reset": reset, "requests": len(replies),
            "prompt_tokens": sum(r.usage.prompt_tokens for r in replies if r.usage),
            "completion_tokens": sum(r.usage.completion_tokens for r in replies if r.usage),
            "finish": sorted({c.finish_reason for r in replies for c in r.choices}),
            "metrics": delta(m0, metrics(url)),
        }
        log(name, {k: v for k, v in out[name].items() if k != "metrics"})
    base = out["one pass"]["wall_s"]
    out["verify_over_one_pass"] = round(out["verify"]["wall_s"] / base, 3)
    out["samples3_over_one_pass"] = round(out["samples 3"]["wall_s"] / base, 3)
    return out


def fresh_budget(engine: Any, answers: str = "expected", scale: float = 1.0) -> Any:
    """The engine's budget as a new process's would be, nothing learned from earlier runs;
    `answers` "whole" holds each request's whole answer room (as before AnswerSizes) and
    `scale` multiplies it (a large one: every request at once, the server's scheduler alone).
    Engines made after this one share it."""
    from reviewbot.engine.budget import AnswerSizes

    budget = engine.budget
    if budget is not None:
        budget.answers = AnswerSizes()
        budget.resize(int(budget.capacity * scale))
        if answers == "whole":
            budget.answers.expected = lambda room: room  # type: ignore[method-assign]
    return budget


def timed_sends(engine: Any) -> list[float]:
    """When each of the engine's finding requests leaves (time.monotonic), from now on."""
    sends: list[float] = []
    call_tool = engine.client.call_tool

    def timed(*args: Any, **kwargs: Any) -> Any:
        sends.append(time.monotonic())
        return call_tool(*args, **kwargs)

    engine.client.call_tool = timed
    return sends


def bot_run(url: str, raw: bytes, concurrency: int, answers: str = "expected",
            **extra: object) -> dict[str, Any]:
    """One review at these settings (`extra`: more settings, such as chunk_tokens or verify;
    `answers` as fresh_budget says)."""
    from reviewbot import diff
    from reviewbot.engine.build import make_engine

    changes = diff.parse(raw)
    engine = make_engine(settings_for(url, concurrency, **extra))
    fresh_budget(engine, answers)
    sends = timed_sends(engine)  # the first shows what packing held back
    reset = reset_cache(url)
    m0 = metrics(url)
    c0, t0 = time.process_time(), time.monotonic()
    result = engine.review(changes)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    m1 = metrics(url)
    s = result.stats
    return {
        "concurrency": concurrency, "cache_reset": reset, "wall_s": round(wall, 3),
        "first_send_s": round(min(sends) - t0, 3) if sends else None,
        "last_send_s": round(max(sends) - t0, 3) if sends else None,
        "client_cpu_s": round(cpu, 3), "client_cpu_share": round(cpu / wall, 4),
        "chunks": s.chunks, "requests": s.requests, "prompt_tokens": s.usage.prompt_tokens,
        "cached_tokens": s.usage.cached_tokens, "completion_tokens": s.usage.completion_tokens,
        "tokens_per_s": round((s.usage.prompt_tokens + s.usage.completion_tokens) / wall, 1),
        "completion_tokens_per_s": round(s.usage.completion_tokens / wall, 1),
        "reviews_per_hour": round(3600 / wall, 1), "complete": s.complete,
        "findings": len(result.findings), "stats": s.to_dict(), "metrics": delta(m0, m1),
        "context": engine.context, "budget": engine.requests.budget,
        "engine_concurrency": engine.settings.concurrency, "kv_tokens": engine.client.kv_tokens(),
    }


def replay(url: str, raw: bytes, **extra: object) -> dict[str, Any]:
    """The review's exact requests, all at once, against the same server (`extra`: the
    settings of the review it replays, such as chunk_tokens)."""
    import openai

    from reviewbot import diff
    from reviewbot.context import Context
    from reviewbot.engine import filters
    from reviewbot.engine.build import make_engine

    settings = settings_for(url, 8, **extra)
    engine = make_engine(settings)
    reviewed, _ = filters.split(diff.parse(raw), settings.exclude)
    t_chunk = time.monotonic()
    chunks = engine.fitting.chunks(reviewed, Context())
    chunk_s = time.monotonic() - t_chunk
    requests = [engine.requests.request(c, Context()) for c in chunks]
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", timeout=600, max_retries=0)

    def one(req: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> dict[str, Any]:
        messages, tool_list = req
        t = time.monotonic()
        r = client.chat.completions.create(
            model=SERVED, messages=messages, tools=tool_list,  # type: ignore[arg-type]
            tool_choice={"type": "function", "function": {"name": "report_findings"}},
            max_tokens=settings.max_output_tokens, temperature=settings.temperature)
        u = r.usage
        details = getattr(u, "prompt_tokens_details", None)
        return {"s": round(time.monotonic() - t, 3), "prompt": u.prompt_tokens if u else 0,
                "cached": int(getattr(details, "cached_tokens", 0) or 0),
                "completion": u.completion_tokens if u else 0,
                "finish": r.choices[0].finish_reason,
                "tool_calls": len(r.choices[0].message.tool_calls or [])}

    reset = reset_cache(url)
    m0 = metrics(url)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, len(requests))) as pool:
        per = list(pool.map(one, requests))
    wall = time.monotonic() - t0
    m1 = metrics(url)
    prompt, completion = sum(p["prompt"] for p in per), sum(p["completion"] for p in per)
    return {
        "requests": len(requests), "concurrency": len(requests), "cache_reset": reset,
        "wall_s": round(wall, 3), "chunking_s": round(chunk_s, 3),
        "prompt_tokens": prompt, "cached_tokens": sum(p["cached"] for p in per),
        "completion_tokens": completion,
        "tokens_per_s": round((prompt + completion) / wall, 1),
        "completion_tokens_per_s": round(completion / wall, 1),
        "finish_reasons": [p["finish"] for p in per], "per_request": per,
        "metrics": delta(m0, m1),
    }


def parallel(url: str, name: str, raw: bytes, n: int) -> dict[str, Any]:
    """n reviews of the same diff at once (`reviews_at_once`)."""
    return {"diff": name, **reviews_at_once(url, [(name, raw)] * n)}


class Gauges:
    """The server's load (vllm:num_requests_running, _waiting, kv_cache_usage_perc), its
    waiting requests counted "deferred" (num_requests_waiting_by_reason: in vLLM 0.26 every
    request with a grammar not yet scheduled, its grammar ready or not) and what the
    process's budget holds, read every `every` seconds while a run goes: whether the budget or
    the server's compute is what a run waits on."""

    DEFERRED = re.compile(r'^vllm:num_requests_waiting_by_reason\{[^}\n]*reason="deferred"[^}\n]*\}'
                          r" ([0-9.eE+-]{1,32})$", re.MULTILINE)

    COUNTERS = ("vllm:prompt_tokens_total", "vllm:prompt_tokens_cached_total",
                "vllm:generation_tokens_total")

    def __init__(self, url: str, budget: Any, every: float = 0.5) -> None:
        self.url, self.budget, self.every = url, budget, every
        self.samples: list[tuple[float, ...]] = []
        self.counted: list[tuple[float, ...]] = []  # (seconds in, *COUNTERS) per sample
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _read(self) -> None:
        import httpx

        from reviewbot.engine import server_metrics
        while not self._stop.wait(self.every):
            try:
                text = httpx.get(self.url + "/metrics", timeout=5).text
            except httpx.HTTPError:
                continue
            load = server_metrics.load(text)
            if load is not None:
                held = self.budget.out / self.budget.capacity if self.budget else 0.0
                deferred = sum(float(v) for v in self.DEFERRED.findall(text))
                self.samples.append((load.running, load.waiting, deferred, load.kv_used, held))
                self.counted.append((time.monotonic() - self._t0,
                                     *(self._counter(text, c) for c in self.COUNTERS)))

    @staticmethod
    def _counter(text: str, name: str) -> float:
        return sum(float(v) for v in re.findall(
            rf"^{re.escape(name)}(?:\{{[^}}\n]*\}})? ([0-9.eE+-]{{1,32}})$", text, re.MULTILINE))

    def series(self) -> list[list[float]]:
        """Per sample: seconds in, running, waiting, deferred, KV used, budget held, and the
        uncached prompt and generated tokens per second since the sample before: where in a
        run the server was busy and where it waited."""
        out = []
        for (t, p, c, g), (t1, p1, c1, g1), gauge in zip(self.counted, self.counted[1:],
                                                          self.samples[1:]):
            dt = max(t1 - t, 1e-6)
            out.append([round(t1, 2), *(round(x, 3) for x in gauge),
                        round(((p1 - c1) - (p - c)) / dt), round((g1 - g) / dt)])
        return out

    def summary(self) -> dict[str, Any]:
        if not self.samples:
            return {}
        n = len(self.samples)
        names = ("running", "waiting", "deferred", "kv_used", "budget_held")
        return {"samples": n, "waiting_share": round(sum(s[1] > 0 for s in self.samples) / n, 3),
                **{f"{k}_mean": round(sum(s[i] for s in self.samples) / n, 3)
                   for i, k in enumerate(names)},
                **{f"{k}_max": round(max(s[i] for s in self.samples), 3)
                   for i, k in enumerate(names)}, "series": self.series()}


def reviews_at_once(url: str, reviews: list[tuple[str, bytes]], concurrency: int = 8,
                    answers: str = "expected", budget_scale: float = 1.0,
                    **extra: object) -> dict[str, Any]:
    """Several reviews at once, each with its own engine (`concurrency`, `extra` settings) and a
    distinct title, which is the first line of every user prompt: the reviews share only the
    system prompt and tool prefix, as different merge requests would. Their one budget is
    fresh_budget(answers, budget_scale)."""
    from reviewbot import diff
    from reviewbot.context import Context, Intent
    from reviewbot.engine.build import make_engine

    changes = [diff.parse(raw) for _, raw in reviews]
    engines = [make_engine(settings_for(url, concurrency, **extra)) for _ in reviews]
    shared = fresh_budget(engines[0], answers, budget_scale)
    sends = [timed_sends(e) for e in engines]
    results: list[Any] = [None] * len(reviews)

    def one(i: int) -> None:
        results[i] = engines[i].review(changes[i], Context(Intent(
            f"review {i} of {len(reviews)} at once: {reviews[i][0]}")))

    reset = reset_cache(url)
    m0 = metrics(url)
    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(reviews))]
    gauges = Gauges(url, shared)
    gauges.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gauges.stop()
    wall = time.monotonic() - t0
    m1 = metrics(url)
    prompt = sum(r.stats.usage.prompt_tokens for r in results)
    completion = sum(r.stats.usage.completion_tokens for r in results)
    return {"kind": "parallel", "parallel_reviews": len(reviews), "cache_reset": reset,
            "diffs": [name for name, _ in reviews], "answers": answers,
            "budget_tokens": shared.capacity if shared else None,
            "wall_s": round(wall, 2), "reviews_per_hour": round(len(reviews) * 3600 / wall, 1),
            "complete": [r.stats.complete for r in results],
            "per_review_wall": [round(r.stats.wall_seconds, 1) for r in results],
            "slowest_s": round(max(r.stats.wall_seconds for r in results), 2),
            # when each review's first finding request left, and when the last of all did
            "first_send_s": [round(min(s) - t0, 2) if s else None for s in sends],
            "last_send_s": round(max((max(s) for s in sends if s), default=t0) - t0, 2),
            "prompt_tokens": prompt, "completion_tokens": completion,
            "cached_tokens": sum(r.stats.usage.cached_tokens for r in results),
            "chunks": [r.stats.chunks for r in results],
            "tokens_per_s": round((prompt + completion) / wall, 1), "gauges": gauges.summary(),
            "metrics": delta(m0, m1)}


def warmup(url: str) -> dict[str, Any]:
    """One tiny forced tool call: first-request initialisation is not part of a review."""
    import openai
    client = openai.OpenAI(base_url=url + "/v1", api_key="EMPTY", timeout=300, max_retries=0)
    tool = {"type": "function", "function": {"name": "ping", "description": "ping",
            "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                           "required": ["ok"]}}}
    t = time.monotonic()
    r = client.chat.completions.create(
        model=SERVED, messages=[{"role": "user", "content": "ping"}], tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": "ping"}}, max_tokens=64)
    c = r.choices[0]
    return {"s": round(time.monotonic() - t, 3), "finish": c.finish_reason,
            "tool_calls": [(x.function.name, x.function.arguments) for x in c.message.tool_calls or []],
            "content": (c.message.content or "")[:200]}


def plan(which: str, diffs: list[str], concurrency: str) -> list[tuple[str, str, int, int]]:
    """Runs in order of importance: the configured concurrency and the ceiling first."""
    cs = [int(c) for c in concurrency.split(",")]
    first = [(d, k, c, 0) for d in sorted(diffs, key=lambda d: d != "large")
             for k, c in [("bot", cs[0]), ("replay", 0)]]
    first += [(d, "bot", c, 0) for d in sorted(diffs, key=lambda d: d != "large") for c in cs[1:]]
    again = [(d, k, c, 1) for d, k, c, _ in first]
    return {"first": first, "repeats": again, "all": first + again, "none": []}[which]


def main() -> int:
    global OUT, SERVED, TEMPERATURE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--payload", type=Path, default=Path("/tmp/payload"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/gpu-run-out")))
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--max-model-len", type=int, default=65536)
    ap.add_argument("--concurrency", default="8,32")
    ap.add_argument("--plan", choices=("first", "repeats", "all", "none"), default="all",
                    help="first: each configuration once; repeats: each once more; none: only --parallel")
    ap.add_argument("--diffs", default="small,large",
                    help="names under PAYLOAD/diffs/ (NAME.diff), or paths to .diff files")
    ap.add_argument("--max-context", type=int, default=None,
                    help="reviewbot's max_context (default: the server's --max-model-len)")
    ap.add_argument("--exclude", action="append", default=[],
                    help="a glob of files the reviews skip (repeatable)")
    ap.add_argument("--startup-limit", type=float, default=420)
    ap.add_argument("--deadline", type=float, default=570,
                    help="seconds after start that no run may cross (estimated from earlier runs)")
    ap.add_argument("--keep-server", action="store_true", help="leave vLLM running (new session)")
    ap.add_argument("--url", help="use this running server (no install, no start): for a dry run")
    ap.add_argument("--served-name", default="qwen3-coder")
    ap.add_argument("--parallel", default="",
                    help="after the plan, e.g. large:4,small:16: that many reviews at once")
    ap.add_argument("--passes", default="",
                    help="e.g. large,small: one pass vs verify vs samples=3, like for like")
    ap.add_argument("--temperature", type=float, default=None,
                    help="for bot and replay alike; 0 makes both decode the same tokens")
    ap.add_argument("--preflight", action="store_true",
                    help="install the wheels, check imports and the machine; start nothing")
    args = ap.parse_args()
    OUT, SERVED, TEMPERATURE = args.out, args.served_name, args.temperature
    if args.max_context:
        SETTINGS["max_context"] = args.max_context
    if args.exclude:
        SETTINGS["exclude"] = tuple(args.exclude)
    RESULT["temperature"] = args.temperature
    OUT.mkdir(parents=True, exist_ok=True)
    begin = time.monotonic()
    url = args.url or f"http://127.0.0.1:{args.port}"
    vlog = args.payload / "vllm.log"
    RESULT["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        if args.url:
            RESULT["server"] = {"url": args.url}
        else:
            RESULT["install"] = install(args.payload)
            log("installed", RESULT["install"])
            if args.preflight:
                RESULT["preflight"] = preflight()
                RESULT["environment"] = {k: v for k, v in environment(args.payload).items()
                                         if k != "versions"}
                return 0
            RESULT["environment"] = environment(args.payload)
            log("environment", RESULT["environment"])
            save()
            RESULT["server"] = start_server(args.payload, args.port, args.max_model_len, vlog,
                                            args.startup_limit)
        log("server", RESULT["server"])
        RESULT["reviewbot"] = reviewbot_importable()
        RESULT["metrics_at_start"] = metrics(url)
        RESULT["warmup"] = warmup(url)
        log("warmup", RESULT["warmup"])
        save()
        runs: list[dict[str, Any]] = RESULT.setdefault("runs", [])
        raws = {Path(n).stem: (Path(n) if n.endswith(".diff") else
                               args.payload / "diffs" / f"{n}.diff").read_bytes()
                for n in args.diffs.split(",")}
        took: dict[str, float] = {}
        for name, kind, conc, i in plan(args.plan, list(raws), args.concurrency):
            raw = raws[name]
            guess = took.get(name, 120.0 if raw.count(b"\n") > 5000 else 40.0)
            label = f"{kind} {name} c={conc} #{i}"
            if time.monotonic() - begin + 1.3 * guess > args.deadline:
                RESULT.setdefault("skipped", []).append(label)
                log("skip (deadline)", label)
                continue
            t = time.monotonic()
            try:
                body = bot_run(url, raw, conc) if kind == "bot" else replay(url, raw)
                r = {"diff": name, "diff_lines": raw.count(b"\n"), "kind": kind, "repeat": i, **body}
            except Exception as exc:  # noqa: BLE001 - record and go on: a partial result beats none
                r = {"diff": name, "kind": kind, "concurrency": conc, "repeat": i,
                     "error": traceback.format_exc()}
                log(label, "failed:", exc)
            took[name] = max(took.get(name, 0.0), time.monotonic() - t)
            runs.append(r)
            log(kind, {k: v for k, v in r.items() if k not in ("stats", "metrics", "per_request")})
            save()
        from reviewbot.errors import ReviewbotError

        for name in filter(None, args.passes.split(",")):
            try:
                r = {"diff": name, "kind": "passes",
                     **passes(url, (args.payload / "diffs" / f"{name}.diff").read_bytes())}
            # what a measurement can run into: a module missing from the payload, a file, the
            # server's answers; anything else is a bug and ends the run loudly
            except (ImportError, OSError, PassFailed, ReviewbotError) as exc:
                r = {"diff": name, "kind": "passes", "error": f"{type(exc).__name__}: {exc}",
                     "traceback": traceback.format_exc()}
            runs.append(r)
            log(f"passes {name}", {k: v for k, v in r.items() if k not in ("one pass", "verify",
                                                                          "samples 3")})
            save()
        for spec in filter(None, args.parallel.split(",")):
            name, n = spec.split(":")
            label = f"parallel {name} x{n}"
            if time.monotonic() - begin + 1.3 * 45 * int(n) * (name == "large") > args.deadline:
                RESULT.setdefault("skipped", []).append(label)
                continue
            try:
                raw = raws.get(name) or (args.payload / "diffs" / f"{name}.diff").read_bytes()
                r = parallel(url, name, raw, int(n))
            except Exception:  # noqa: BLE001 - record and go on
                r = {"diff": name, "kind": "parallel", "error": traceback.format_exc()}
            runs.append(r)
            log(label, {k: v for k, v in r.items() if k != "metrics"})
            save()
        RESULT["metrics_at_end"] = metrics(url)
    except Exception:  # noqa: BLE001 - whatever breaks is the finding; the log tail follows
        RESULT["fatal"] = traceback.format_exc()
        log("FATAL", RESULT["fatal"])
    finally:
        RESULT["elapsed_s"] = round(time.monotonic() - begin, 1)
        save()
        if vlog.exists():
            lines = vlog.read_text(errors="replace").splitlines()
            (OUT / "vllm_log_tail.txt").write_text("\n".join(lines[-600:]) + "\n")
            (OUT / "vllm_log_head.txt").write_text("\n".join(lines[:400]) + "\n")
        # never the pid file's process: a --preflight (or a run reusing a server) that ends
        # while another call's server is starting must leave it alone
        for pid in [] if args.keep_server else STARTED:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    return 0 if "fatal" not in RESULT else 1


if __name__ == "__main__":
    raise SystemExit(main())
