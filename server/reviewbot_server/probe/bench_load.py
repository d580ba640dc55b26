"""Closed-loop load for `reviewbot server bench`: N workers, one prompt size per phase.

Every request streams (TTFT = the first streamed chunk, sent with the first token), forces a
tool call as the bot does, and is bounded by `max_tokens` and a timeout. A phase stops
issuing at its deadline and waits for requests in flight, so each loop is bounded.
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessageParam

from reviewbot_server.probe.check import FORCED, TOOL


@dataclass(frozen=True)
class Phase:
    name: str  # small / medium / large
    target_tokens: int
    prompt: str  # the diff body; a unique header per request defeats prefix caching


@dataclass
class PhaseStats:
    phase: Phase
    ttft: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    output_tokens: int = 0
    ok: int = 0
    errors: int = 0
    first_error: str = ""
    elapsed: float = 0.0

    def summary(self) -> dict[str, Any]:
        done = self.ok + self.errors
        wall = max(self.elapsed, 1e-9)
        return {
            "name": self.phase.name,
            "target_prompt_tokens": self.phase.target_tokens,
            "requests": done,
            "ok": self.ok,
            "errors": self.errors,
            "error_rate": round(self.errors / done, 4) if done else 0.0,
            "first_error": self.first_error,
            "mean_prompt_tokens": round(self.prompt_tokens / self.ok) if self.ok else 0,
            "ttft_p50_s": percentile(self.ttft, 50),
            "ttft_p95_s": percentile(self.ttft, 95),
            "latency_p50_s": percentile(self.latency, 50),
            "input_tokens_per_s": round(self.prompt_tokens / wall, 1),
            "output_tokens_per_s": round(self.output_tokens / wall, 1),
            "reviews_per_hour": round(self.ok / wall * 3600, 1),
            "elapsed_s": round(self.elapsed, 2),
        }


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile; None when nothing was measured."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return round(ordered[rank - 1], 4)


@dataclass(frozen=True)
class LoadConfig:
    model: str
    concurrency: int
    output_tokens: int
    timeout: float


def _messages(phase: Phase) -> list[ChatCompletionMessageParam]:
    header = f"Review request {uuid.uuid4()} ({phase.name} merge request).\n"
    return [
        {"role": "system", "content": "You review merge requests. Report each problem with "
                                      "report_finding."},
        {"role": "user", "content": header + phase.prompt},
    ]


async def _one(client: openai.AsyncOpenAI, cfg: LoadConfig, stats: PhaseStats) -> None:
    start = time.monotonic()
    first: float | None = None
    usage = None
    try:
        stream = await client.chat.completions.create(
            model=cfg.model, messages=_messages(stats.phase), tools=[TOOL], tool_choice=FORCED,
            max_tokens=cfg.output_tokens, temperature=0, stream=True,
            stream_options={"include_usage": True})
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            if first is None and chunk.choices:
                # vLLM sends its first chunk (the role) with the first generated token;
                # whitespace-only tool arguments may not stream as deltas at all
                first = time.monotonic() - start
    except openai.OpenAIError as exc:
        stats.errors += 1
        stats.first_error = stats.first_error or f"{type(exc).__name__}: {exc}"[:300]
        return
    stats.latency.append(time.monotonic() - start)
    if first is not None:
        stats.ttft.append(first)
    stats.ok += 1
    if usage is not None:
        stats.prompt_tokens += usage.prompt_tokens
        stats.output_tokens += usage.completion_tokens


async def run_phase(
    client: openai.AsyncOpenAI, cfg: LoadConfig, phase: Phase, duration: float,
    tick: Callable[[PhaseStats, float], None], max_requests: int | None = None,
) -> PhaseStats:
    stats = PhaseStats(phase)
    start = time.monotonic()
    deadline = start + duration
    issued = 0

    async def worker() -> None:
        nonlocal issued
        while time.monotonic() < deadline and (max_requests is None or issued < max_requests):
            issued += 1
            await _one(client, cfg, stats)
            stats.elapsed = time.monotonic() - start

    async def ticker() -> None:
        while True:
            tick(stats, min(1.0, (time.monotonic() - start) / duration))
            await asyncio.sleep(0.25)

    ticking = asyncio.create_task(ticker())
    try:
        await asyncio.gather(*(worker() for _ in range(cfg.concurrency)))
    finally:
        ticking.cancel()
    stats.elapsed = time.monotonic() - start
    tick(stats, 1.0)
    return stats


async def run_load(
    base_url: str, api_key: str | None, cfg: LoadConfig, phases: list[Phase],
    duration: float, tick: Callable[[PhaseStats, float], None], max_requests: int | None = None,
) -> list[PhaseStats]:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "EMPTY",
                                timeout=cfg.timeout, max_retries=0)
    async with client:
        return [await run_phase(client, cfg, phase, duration, tick, max_requests)
                for phase in phases]
