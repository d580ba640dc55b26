"""`reviewbot server bench`: a bounded, review-shaped load test for sizing a box.

One phase per prompt size (default 4k, 16k, 60k tokens: small, medium and large MRs),
each run for duration / sizes seconds by `--concurrency` workers, every request streaming
a forced tool call with a few hundred output tokens. Reports TTFT p50/p95, input/output
tokens/s, error rate and reviews/hour per MR size; progress on stderr, figures on stdout.
Prompt sizes are calibrated with the server's own `/tokenize`.
"""

from __future__ import annotations

import asyncio
import json
import re

import click
import httpx
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from reviewbot_server.errors import BackendUnreachable, UsageError
from reviewbot_server.probe.bench_load import LoadConfig, Phase, PhaseStats, run_load
from reviewbot_server.probe.check import TOOL, split_url
from reviewbot_server.redact import redact, register_secret

NAMES = ("small", "medium", "large", "x-large", "xx-large")


def parse_sizes(text: str, scale: float) -> list[int]:
    """`4k,16k,60k` → token counts (k = 1024), multiplied by --scale."""
    sizes = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kK]?)\s*", part)
        if not match:
            raise UsageError(f"--sizes {text!r}: expected numbers like 4k,16k,60k")
        tokens = float(match.group(1)) * (1024 if match.group(2) else 1) * scale
        if tokens < 64:
            raise UsageError(f"--sizes {part.strip()} × --scale {scale} is under 64 tokens")
        sizes.append(int(tokens))
    if not 1 <= len(sizes) <= len(NAMES):
        raise UsageError(f"--sizes: between 1 and {len(NAMES)} sizes")
    return sizes


def _diff_lines(count: int) -> str:
    """A deterministic, code-like unified diff body of `count` changed lines."""
    out = ["diff --git a/app/service.py b/app/service.py", "--- a/app/service.py",
           "+++ b/app/service.py", f"@@ -1,{count} +1,{count} @@"]
    for i in range(count):
        out.append(f"+    total_{i} = compute_{i % 97}(items[{i}], limit={i * 7 % 1000})"
                   f"  # step {i}: adjust budget")
    return "\n".join(out)


def _count(client: httpx.Client, root: str, model: str, text: str) -> int | None:
    messages = [{"role": "user", "content": text}]
    resp = client.post(f"{root}/tokenize", json={"model": model, "messages": messages,
                                                   "tools": [TOOL]})
    return int(resp.json()["count"]) if resp.status_code == 200 else None


def build_prompts(client: httpx.Client, root: str, model: str, sizes: list[int],
                  notes: list[str]) -> list[Phase]:
    """Size each diff with the server's /tokenize: estimate, then refine twice
    (tokens per line grow with the line numbers). Fallback: ~24 tokens per line."""
    base = _count(client, root, model, _diff_lines(0))
    if base is None:
        notes.append("/tokenize unavailable: prompt sizes estimated at 24 tokens per line")
    phases = []
    for name, size in zip(NAMES, sizes, strict=False):
        budget = size - 40  # the per-request header and system prompt
        if base is not None and base >= budget:
            notes.append(f"{name}: {size} tokens is below the fixed prompt (chat template "
                         f"and tool schema: {base} tokens)")
        lines = max(1, budget // 24)
        for _ in range(3 if base is not None else 0):
            counted = _count(client, root, model, _diff_lines(lines))
            if counted is None or base is None or counted <= base:
                break
            lines = max(1, int(lines * (budget - base) / (counted - base)))
        phases.append(Phase(name, size, _diff_lines(lines)))
    return phases


def _server_info(client: httpx.Client, base_url: str, model: str | None) -> tuple[str, int]:
    try:
        resp = client.get(f"{base_url}/models")
    except httpx.HTTPError as exc:
        raise BackendUnreachable(f"{base_url}/models: {type(exc).__name__}: {exc}") from exc
    if resp.status_code != 200:
        raise BackendUnreachable(f"GET {base_url}/models → {resp.status_code}")
    served = {m["id"]: m.get("max_model_len") or 0 for m in resp.json().get("data", [])}
    name = model or next(iter(served), None)
    if name not in served:
        raise UsageError(f"--model {name!r} is not served; served: {sorted(served)}")
    return str(name), int(served[name])


def _report(stats: list[PhaseStats], notes: list[str]) -> str:
    lines = [(f"{'MR size':<9}{'prompt':>8}{'reqs':>6}{'err%':>6}{'TTFT p50':>10}{'p95':>8}"
             f"{'in tok/s':>10}{'out tok/s':>10}{'reviews/h':>11}")]
    for s in (st.summary() for st in stats):
        def sec(v: float | None) -> str:
            return f"{v:.2f}s" if v is not None else "-"
        lines.append(f"{s['name']:<9}{s['mean_prompt_tokens']:>8}{s['requests']:>6}"
                     f"{s['error_rate'] * 100:>5.0f}%{sec(s['ttft_p50_s']):>10}"
                     f"{sec(s['ttft_p95_s']):>8}{s['input_tokens_per_s']:>10}"
                     f"{s['output_tokens_per_s']:>10}{s['reviews_per_hour']:>11}")
        if s["first_error"]:
            lines.append(f"  first error: {redact(s['first_error'])}")
    lines += [f"note: {n}" for n in notes]
    return "\n".join(lines) + "\n"


@click.command("bench")
@click.option("--base-url", required=True, help="vLLM server, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", default=None, help="Served model name (default: the first served).")
@click.option("--api-key", envvar="REVIEWBOT_API_KEY", default=None,
              help="API key (default $REVIEWBOT_API_KEY); never printed.")
@click.option("--duration", type=float, default=180.0, show_default=True,
              help="Seconds in all, split evenly over the sizes.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True)
@click.option("--sizes", default="4k,16k,60k", show_default=True,
              help="Prompt tokens per MR size (k = 1024).")
@click.option("--scale", type=float, default=1.0, show_default=True,
              help="Multiply every size (e.g. 0.05 for a CPU test server).")
@click.option("--output-tokens", type=click.IntRange(1, 4096), default=300, show_default=True)
@click.option("--max-requests", type=click.IntRange(1), default=None,
              help="Stop a phase after this many requests, even before --duration.")
@click.option("--timeout", type=float, default=600.0, show_default=True,
              help="Seconds per request.")
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def bench(base_url: str, model: str | None, api_key: str | None, duration: float,
          concurrency: int, sizes: str, scale: float, output_tokens: int,
          max_requests: int | None, timeout: float, output: str) -> None:
    """Load-test a vLLM server with review-shaped requests and report its capacity."""
    register_secret(api_key)
    base, root = split_url(base_url)
    if not 1 <= duration <= 24 * 3600:
        raise UsageError("--duration: between 1 s and 24 h")
    token_sizes = parse_sizes(sizes, scale)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    notes: list[str] = []
    with httpx.Client(headers=headers, timeout=60) as client:
        name, max_len = _server_info(client, base, model)
        too_big = [s for s in token_sizes if max_len and s + output_tokens > max_len]
        if too_big:
            raise UsageError(f"sizes {too_big} + {output_tokens} output tokens exceed the "
                             f"server's max_model_len {max_len}: use smaller --sizes or --scale")
        phases = build_prompts(client, root, name, token_sizes, notes)
    cfg = LoadConfig(name, concurrency, output_tokens, timeout)
    per_phase = duration / len(phases)
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[done]} done, {task.fields[errors]} errors"),
                  console=Console(stderr=True)) as progress:
        tasks = {p.name: progress.add_task(f"{p.name} ({p.target_tokens} tok)", total=1.0,
                                           done=0, errors=0) for p in phases}

        def tick(stats: PhaseStats, fraction: float) -> None:
            progress.update(tasks[stats.phase.name], completed=fraction, done=stats.ok,
                            errors=stats.errors)

        stats = asyncio.run(run_load(base, api_key, cfg, phases, per_phase, tick, max_requests))
    if output == "json":
        body = {"base_url": base, "model": name, "concurrency": concurrency,
                "duration_s": duration, "output_tokens": output_tokens,
                "phases": [s.summary() for s in stats], "notes": notes}
        click.echo(redact(json.dumps(body, indent=2)))
    else:
        click.echo(_report(stats, notes), nl=False)
