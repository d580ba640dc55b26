"""Building an engine from settings: the model client with its deadlines, the most exact token
counter the server allows, the concurrency its KV cache holds, and the process's share of it."""

from __future__ import annotations

from dataclasses import replace

import httpx

from reviewbot.config import Settings
from reviewbot.deadline import DeadlineTransport
from reviewbot.engine.budget import shared_budget
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.progress import ChunkProgress, NoProgress
from reviewbot.engine.tokens import (
    DegradingCounter,
    EstimateTokenCounter,
    LocalTokenCounter,
    TokenCounter,
)
from reviewbot.engine.vllm_tokens import VllmTokenCounter
from reviewbot.errors import BackendError


def counter_for(settings: Settings, client: ModelClient, model: str,
                http: httpx.Client) -> TokenCounter:
    """The most exact counter available: the server's /tokenize (with texts counted by the
    tokenizer.json when there is one: the same counts, sooner), a tokenizer.json, an estimate."""
    # /tokenize is outside vLLM's /v1, but a load balancer in front may still want the key
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    vllm = VllmTokenCounter.probe(client.root_url, model, http, headers)
    local = LocalTokenCounter(settings.tokenizer) if settings.tokenizer else None
    if vllm is not None:
        return DegradingCounter(vllm, texts=local if local and same_counts(vllm, local) else None)
    return local or EstimateTokenCounter()


# code-like text with what tokenizers treat differently: indentation, tabs, digits, unicode
PROBE = ("def f(x: int) -> str:\n    return f'{x:>8}'  # naïve — ok ✓\n"
         "\t\tif a != b and c <= 0x1F:  pass\n+12 added\n-removed\n 中文 “quoted”\n") * 3


def same_counts(server: TokenCounter, local: TokenCounter) -> bool:
    """Whether the tokenizer.json counts as the server does (another model's would not):
    otherwise the server counts everything, as without one."""
    probes = [PROBE, PROBE[:97], PROBE.upper()]
    try:
        return server.count_texts(probes) == local.count_texts(probes)
    except BackendError:
        return False


FALLBACK_CONCURRENCY = 8  # when the server does not say how much it holds
MAX_CONCURRENCY = 64  # at 16K units a 1 MB change is 34 chunks: at 32, two waited for a slot


def concurrency_for(settings: Settings, kv_tokens: int | None, chunk_tokens: int) -> int:
    """`concurrency`, or (at 0) as many chunks as the server's KV cache holds at once, plus
    one so that the next is queued when one ends: a review's chunks then go out together
    instead of in waves (on the H200, at 8, a 9-chunk review ran as two waves)."""
    if settings.concurrency:
        return settings.concurrency
    if not kv_tokens:
        return FALLBACK_CONCURRENCY
    return max(2, min(MAX_CONCURRENCY, kv_tokens // max(1, chunk_tokens) + 1))


def make_engine(settings: Settings, progress: ChunkProgress | None = None) -> Engine:
    # one connection pool (and one TLS context, which costs real CPU to build) for everything
    limits = httpx.Limits(max_connections=2 * MAX_CONCURRENCY + 4)
    transport = DeadlineTransport(httpx.HTTPTransport(limits=limits), settings.request_timeout)
    http = httpx.Client(timeout=settings.request_timeout, transport=transport)
    client = ModelClient(settings.base_url, settings.api_key, settings.request_timeout,
                         settings.retries, http_client=http)
    served = client.discover(settings.model)
    context = min(served.max_model_len or settings.max_context, settings.max_context)
    unit = min(context, settings.chunk_tokens + settings.max_output_tokens) \
        if settings.chunk_tokens else context
    kv_tokens = client.kv_tokens()
    settings = replace(settings, concurrency=concurrency_for(settings, kv_tokens, unit))
    # every review of this process shares the server's cache (reviewbot.engine.budget)
    budget = shared_budget(client.base_url, kv_tokens, client.server_load) if kv_tokens else None
    return Engine(settings, client, counter_for(settings, client, served.model, http),
                  served.model, context, progress or NoProgress(), budget)
