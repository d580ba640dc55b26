"""Is a vLLM server really serving? A real inference canary, and its load from /metrics.

`/health` only checks an error flag and answers 200 while an engine hangs, so readiness and
liveness run inference: a 1-token completion, then a forced (named) tool call, which goes
through the chat template, guided decoding and the tool parser. Both share one deadline.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

CANARY_TOOL = {
    "type": "function",
    "function": {
        "name": "canary",
        "description": "Answer the health check.",
        "strict": True,  # vLLM pins argument schemas only for strict tools
        "parameters": {
            "type": "object",
            "properties": {"ok": {"type": "boolean"}},
            "required": ["ok"],
            "additionalProperties": False,
        },
    },
}
# A random-weight model may pad whitespace up to max_tokens: keep the call short and bounded.
CANARY_MAX_TOKENS = 24
# Prompt sizes a review sends (its units are 16K-64K tokens): vLLM compiles its MoE and grammar
# kernels during the first real requests of each shape (1.5-2 s once on the H200), so a new
# server takes one forced call of each before it is ready, and a review never pays for it.
WARM_UP_TOKENS = (2048, 16384, 49152)
# then that many calls at once, each of BURST_TOKENS: the first review's batches of many
# requests, guided both ways, greedy and sampled, meet kernels the single calls did not
WARM_UP_BURST = 16
BURST_TOKENS = 2048

# Current names first, then names of older releases (gpu_cache_usage_perc until 0.11).
_KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
_RUNNING = ("vllm:num_requests_running",)
_WAITING = ("vllm:num_requests_waiting",)
_TOKENS = ("vllm:generation_tokens_total", "vllm:prompt_tokens_total")


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    latency_s: float
    error: str = ""
    tool_call_parsed: bool = False  # informative: random weights rarely finish a call


@dataclass(frozen=True)
class EngineLoad:
    kv_cache_usage: float | None = None  # 0..1
    requests_running: float | None = None
    requests_waiting: float | None = None
    tokens_total: float | None = None  # prompt + generated, a counter: grows while it works


def _post(client: httpx.Client, url: str, body: dict[str, object], deadline: float) -> dict:  # type: ignore[type-arg]
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise httpx.TimeoutException("canary deadline passed")
    resp = client.post(url, json=body, timeout=remaining)
    resp.raise_for_status()
    data = resp.json()
    if not isinstance(data, dict) or not data.get("choices"):
        raise ValueError(f"no choices in the answer from {url}")
    return data


def _tool_call(client: httpx.Client, root_url: str, model: str, content: str,
               deadline: float, guided: bool = False,
               **sampling: object) -> dict:  # type: ignore[type-arg]
    """A forced call of the canary tool; `guided`: its arguments asked for as an answer guided
    by `response_format` beside the tools, as a review asks for its verification."""
    schema = CANARY_TOOL["function"]["parameters"]  # type: ignore[index]
    ask = ({"tool_choice": "none", "response_format": {
        "type": "json_schema", "json_schema": {"name": "canary", "schema": schema, "strict": True}}}
           if guided else {"tool_choice": {"type": "function", "function": {"name": "canary"}}})
    return _post(client, f"{root_url}/v1/chat/completions", {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "tools": [CANARY_TOOL],
        **ask,
        "max_tokens": CANARY_MAX_TOKENS,
        **sampling,
    }, deadline)


def warm_up(client: httpx.Client, root_url: str, model: str, sizes: tuple[int, ...],
            max_model_len: int, timeout: float, burst: int = 0) -> dict[str, float | None]:
    """One forced tool call per prompt size (about `size` tokens, within the context), each
    within `timeout`, then `burst` calls at once, as a review sends them (forced calls and
    guided answers, greedy and sampled): seconds per size and for the burst ("burst"), None
    where it failed (the server is ready all the same: its canary passed; the first review
    then pays the compile)."""
    out: dict[str, float | None] = {}
    for size in sorted({min(s, int(max_model_len * 0.9)) for s in sizes if s > 0}):
        start = time.monotonic()
        try:  # "x = 1\n" is about four tokens in the common code tokenizers
            _tool_call(client, root_url, model, _filler(size), start + timeout)
            out[str(size)] = round(time.monotonic() - start, 3)
        except (httpx.HTTPError, ValueError):
            out[str(size)] = None
    if burst > 0:
        start = time.monotonic()
        size = min(BURST_TOKENS, int(max_model_len * 0.9))

        def one(i: int) -> None:
            _tool_call(client, root_url, model, f"Request {i}. " + _filler(size), start + timeout,
                       guided=i % 2 == 1, temperature=(0.0, 0.1)[i // 2 % 2])

        try:
            with ThreadPoolExecutor(max_workers=burst) as pool:
                list(pool.map(one, range(burst)))
            out["burst"] = round(time.monotonic() - start, 3)
        except (httpx.HTTPError, ValueError):
            out["burst"] = None
    return out


def _filler(size: int) -> str:
    return "Warm-up, call the tool.\n" + "x = 1\n" * (size // 4)


def run_canary(client: httpx.Client, root_url: str, model: str, timeout: float) -> CanaryResult:
    """One completion token and one forced tool call, within `timeout` seconds in all."""
    start = time.monotonic()
    deadline = start + timeout
    try:
        _post(client, f"{root_url}/v1/completions",
              {"model": model, "prompt": "ping", "max_tokens": 1}, deadline)
        data = _tool_call(client, root_url, model, "Health check: call the tool.", deadline)
    except httpx.HTTPStatusError as exc:
        return CanaryResult(False, time.monotonic() - start,
                            f"HTTP {exc.response.status_code} from {exc.request.url.path}")
    except httpx.TimeoutException:
        return CanaryResult(False, time.monotonic() - start, f"no answer within {timeout:g} s")
    except httpx.TransportError as exc:
        return CanaryResult(False, time.monotonic() - start, f"unreachable: {exc}")
    except ValueError as exc:  # includes JSON decode errors
        return CanaryResult(False, time.monotonic() - start, f"bad answer: {exc}")
    calls = data["choices"][0].get("message", {}).get("tool_calls") or []
    return CanaryResult(True, time.monotonic() - start, tool_call_parsed=bool(calls))


def parse_load(metrics_text: str) -> EngineLoad:
    """Requests summed over engines (data parallel), KV usage of the fullest engine; None for
    a metric the server does not export."""
    values: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if not math.isnan(sample.value):
                values.setdefault(sample.name, []).append(sample.value)

    def pick(names: tuple[str, ...], combine: Callable[[list[float]], float]) -> float | None:
        return next((combine(values[n]) for n in names if n in values), None)

    counted = [sum(values[n]) for n in _TOKENS if n in values]
    return EngineLoad(pick(_KV_USAGE, max), pick(_RUNNING, sum), pick(_WAITING, sum),
                      sum(counted) if counted else None)


def fetch_load(client: httpx.Client, root_url: str, timeout: float) -> EngineLoad | None:
    try:
        resp = client.get(f"{root_url}/metrics", timeout=timeout)
        resp.raise_for_status()
    except httpx.HTTPError:
        return None
    try:
        return parse_load(resp.text)
    except ValueError:  # not Prometheus text: a fake server, a proxy error page
        return None
