"""`reviewbot server check`: what a team runs before trusting a vLLM server with reviews.

Each check prints one PASS/WARN/FAIL line; exit 0 when nothing fails, 1 when any check
fails, 2 on usage errors. WARN covers what a healthy server can still do (a random-weight
test model answering `tool_choice=auto` without a tool call). Every request is bounded
(`max_tokens`, timeouts); the API key is sent, never printed.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import httpx
import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionNamedToolChoiceParam,
)

from reviewbot_server.deadline import bounded_client
from reviewbot_server.errors import UsageError
from reviewbot_server.redact import redact, register_secret

DEFAULT_CONTEXT = 65_536
TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "report_finding",
        "description": "Report one problem found in the diff.",
        "parameters": {
            "type": "object",
            "properties": {"line": {"type": "integer"}, "message": {"type": "string"}},
            "required": ["line", "message"],
            "additionalProperties": False,
        },
    },
}
TOOL_PROMPT = ("Review this diff and report the bug with report_finding.\n"
               "+    if user = None:\n+        return")
FORCED: ChatCompletionNamedToolChoiceParam = {"type": "function",
                                            "function": {"name": "report_finding"}}
TOOL_MAX_TOKENS = 128  # a random model pads whitespace under guided decoding until the cap


@dataclass(frozen=True)
class Result:
    name: str
    status: str  # PASS, WARN, FAIL
    detail: str


@dataclass
class Server:
    base_url: str  # …/v1
    root_url: str
    api_key: str | None
    timeout: float
    model: str | None = None
    max_model_len: int | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def http(self) -> httpx.Client:
        """Every probe ends within `timeout`, also on a server that trickles its answer."""
        return bounded_client(self.timeout, self.headers())

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "EMPTY",
                             timeout=self.timeout, max_retries=0,
                             # openai types its own httpx fork; it takes this client all the same
                             http_client=bounded_client(self.timeout))  # type: ignore[arg-type]


def split_url(url: str) -> tuple[str, str]:
    """`http://h:p`, `http://h:p/` or `http://h:p/v1` → (…/v1, root)."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(f"--base-url {url!r}: expected http(s)://HOST:PORT[/v1]")
    root = url.rstrip("/").removesuffix("/v1")
    return f"{root}/v1", root


def _ms(start: float) -> str:
    return f"{(time.monotonic() - start) * 1000:.0f} ms"


def check_reachable(s: Server) -> Result:
    start = time.monotonic()
    try:
        with s.http() as http:
            resp = http.get(f"{s.root_url}/health")
    except httpx.HTTPError as exc:
        return Result("reachable", "FAIL", f"{s.root_url}: {type(exc).__name__}: {exc}")
    status = "PASS" if resp.status_code == 200 else "FAIL"
    return Result("reachable", status, f"GET /health → {resp.status_code} ({_ms(start)})")


def check_model(s: Server) -> Result:
    try:
        models = s.client().models.list().data
    except openai.APIStatusError as exc:
        hint = " (wrong or missing --api-key)" if exc.status_code == 401 else ""
        return Result("model served", "FAIL", f"GET /v1/models → {exc.status_code}{hint}")
    except openai.APIConnectionError as exc:
        return Result("model served", "FAIL", f"GET /v1/models: {exc}")
    served = [m.id for m in models]
    wanted = s.model or (served[0] if served else None)
    if wanted not in served:
        return Result("model served", "FAIL", f"{wanted!r} is not served; served: {served}")
    s.model = wanted
    entry = next(m for m in models if m.id == wanted)
    extra = getattr(entry, "model_extra", None) or {}
    s.max_model_len = int(extra["max_model_len"]) if extra.get("max_model_len") else None
    return Result("model served", "PASS", f"{wanted} (served: {', '.join(served)})")


def check_context(s: Server, min_context: int) -> Result:
    if s.max_model_len is None:
        return Result("context", "FAIL", "/v1/models reports no max_model_len (not vLLM?)")
    ok = s.max_model_len >= min_context
    return Result("context", "PASS" if ok else "FAIL",
                  f"max_model_len {s.max_model_len:,} {'≥' if ok else '<'} review budget "
                  f"{min_context:,}" + ("" if ok else " (raise --max-model-len or lower "
                                        "the bot's budget)"))


def check_tokenize(s: Server) -> Result:
    start = time.monotonic()
    try:
        with s.http() as http:
            resp = http.post(f"{s.root_url}/tokenize",
                             json={"model": s.model, "prompt": "def add(a, b): return a + b"})
    except httpx.HTTPError as exc:
        return Result("tokenize", "FAIL", f"POST /tokenize: {type(exc).__name__}")
    if resp.status_code != 200:
        return Result("tokenize", "FAIL", f"POST /tokenize → {resp.status_code}; the bot "
                      "counts tokens with it")
    return Result("tokenize", "PASS", f"{resp.json().get('count')} tokens ({_ms(start)})")


def check_latency(s: Server) -> Result:
    start = time.monotonic()
    try:
        s.client().chat.completions.create(
            model=s.model or "", max_tokens=1, temperature=0,
            messages=[{"role": "user", "content": "ping"}])
    except openai.OpenAIError as exc:
        return Result("latency", "FAIL", f"1-token chat completion failed: {exc}")
    seconds = time.monotonic() - start
    status = "PASS" if seconds < 10 else "WARN"
    return Result("latency", status, f"1-token chat completion in {seconds:.2f} s")


def _tool_call(s: Server, choice: Any, temperature: float = 0.0,
               seed: int | None = None) -> tuple[Any, str]:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": TOOL_PROMPT}]
    resp = s.client().chat.completions.create(
        model=s.model or "", messages=messages, tools=[TOOL], tool_choice=choice,
        max_tokens=TOOL_MAX_TOKENS, temperature=temperature, seed=seed)
    choice0 = resp.choices[0]
    return choice0.message.tool_calls, choice0.finish_reason or ""


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


# Greedy first; a random-weight model can loop until max_tokens, so two seeded samples follow.
FORCED_ATTEMPTS = ((0.0, None), (0.8, 1), (0.8, 2))


def check_tool_forced(s: Server) -> Result:
    """vLLM 0.32 forces the tool name; the arguments follow the schema only for tools
    with `strict: true`, so JSON arguments are checked, not assumed."""
    name = "tool call (forced)"
    start = time.monotonic()
    finishes = []
    for temperature, seed in FORCED_ATTEMPTS:
        try:
            calls, finish = _tool_call(s, FORCED, temperature, seed)
        except openai.OpenAIError as exc:
            return Result(name, "FAIL", f"named tool_choice rejected: {exc}")
        finishes.append(finish)
        if calls and calls[0].function.name == "report_finding":
            if _json_object(calls[0].function.arguments):
                return Result(name, "PASS", f"report_finding called with JSON arguments "
                              f"({_ms(start)})")
            return Result(name, "WARN", "report_finding called, but its arguments are not a "
                          "JSON object (random-weight model? `strict: true` tools constrain "
                          "them)")
        if finish != "length":
            return Result(name, "FAIL", f"no report_finding call came back (finish={finish})")
    return Result(name, "WARN", f"every attempt ran into the {TOOL_MAX_TOKENS}-token cap "
                  f"without a complete call ({', '.join(finishes)}): expected from a "
                  "random-weight test model, not from a real one")


def check_tool_auto(s: Server) -> Result:
    name = "tool call (auto)"
    try:
        calls, finish = _tool_call(s, "auto")
    except openai.BadRequestError as exc:
        return Result(name, "FAIL", f"tool_choice=auto rejected ({exc.status_code}): start vLLM "
                      "with --enable-auto-tool-choice --tool-call-parser NAME")
    except openai.OpenAIError as exc:
        return Result(name, "FAIL", f"tool_choice=auto failed: {exc}")
    if calls:
        return Result(name, "PASS", f"parser returned {calls[0].function.name}")
    return Result(name, "WARN", f"answered without a tool call (finish={finish}): expected "
                  "from a random-weight test model; a real model should call the tool")


def run_checks(s: Server, min_context: int, echo: Callable[[Result], None]) -> list[Result]:
    results = [check_reachable(s)]
    echo(results[0])
    if results[0].status == "FAIL":
        return results
    steps = [check_model, lambda srv: check_context(srv, min_context), check_tokenize,
             check_latency, check_tool_forced, check_tool_auto]
    for step in steps:
        result = step(s)
        results.append(result)
        echo(result)
        if result.name == "model served" and result.status == "FAIL":
            break  # every later check needs a served model
    return results


def _echo(result: Result) -> None:
    color = {"PASS": "green", "WARN": "yellow", "FAIL": "red"}[result.status]
    click.echo(f"{click.style(result.status, fg=color)}  {result.name:<20} "
               f"{redact(result.detail)}")


@click.command("check")
@click.option("--base-url", required=True, help="vLLM server, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", default=None, help="Served model name (default: the first served).")
@click.option("--api-key", envvar="REVIEWBOT_API_KEY", default=None,
              help="API key (default $REVIEWBOT_API_KEY); never printed.")
@click.option("--min-context", type=int, default=DEFAULT_CONTEXT, show_default=True,
              help="Review budget the server's max_model_len must reach.")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds per request.")
def check(base_url: str, model: str | None, api_key: str | None, min_context: int,
          timeout: float) -> None:
    """Check a vLLM server before trusting it with reviews."""
    register_secret(api_key)
    base, root = split_url(base_url)
    if min_context < 1:
        raise UsageError("--min-context must be positive")
    server = Server(base, root, api_key, timeout, model=model)
    results = run_checks(server, min_context, _echo)
    failed = [r.name for r in results if r.status == "FAIL"]
    warned = [r.name for r in results if r.status == "WARN"]
    summary = "FAIL: " + ", ".join(failed) if failed else "all checks passed"
    click.echo(summary + (f" ({len(warned)} warning(s))" if warned else ""))
    sys.exit(1 if failed else 0)
