"""A scripted OpenAI-compatible server: a real HTTP server on 127.0.0.1 for deterministic flows.

It counts tokens with one simple, consistent rule (words and punctuation), answers /tokenize like
vLLM (chat template + tools included), rejects requests over its context with vLLM's 400, and
replies to chat completions with whatever the test's `script` returns.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

TOKEN = re.compile(r"\w+|[^\w\s]")


def count(text: str) -> int:
    return len(TOKEN.findall(text))


def request_tokens(body: dict[str, Any]) -> int:
    template = sum(4 + count(str(m.get("content") or "")) for m in body.get("messages", []))
    return template + count(json.dumps(body.get("tools") or [])) + 3


@dataclass
class Reply:
    status: int = 200
    tool_args: Any = None  # dict → JSON-encoded; str → sent as is (malformed on purpose)
    tool_name: str = "report_findings"
    content: str | None = None
    finish_reason: str = "tool_calls"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "server error"
    body: Any = None  # a whole JSON answer of the test's own making (choices: [], …)
    raw: bytes | None = None  # a 200 whose body is these bytes, as text/html
    trickle: float = 0.0  # seconds between the bytes of the answer (headers sent at once)
    samples: list[Any] | None = None  # tool_args of each choice, for a request with n > 1


Script = Callable[[dict[str, Any], int], Reply]


class FakeOpenAI:
    def __init__(self, script: Script, model: str = "fake", max_model_len: int | None = 4096,
                 tokenize: bool = True) -> None:
        self.script = script
        self.model = model
        self.max_model_len = max_model_len
        self.tokenize = tokenize
        self.requests: list[dict[str, Any]] = []
        self.tokenize_calls = 0
        self.metrics: bytes | None = None  # GET /metrics answers these bytes (else 404)
        self.tokenize_429 = 0  # answer this many /tokenize calls with 429 (Retry-After: 0)
        self.tokenize_429_skip = 0  # … after letting this many through
        self.tokenize_status = 429  # the status of those answers (502: a restart behind a balancer)
        self.tokenize_count = True  # False: answer 200 without `count` (after the probe too)
        self.count_delay = 0.0  # seconds each /tokenize of a whole request takes
        self.events: list[tuple[str, float]] = []  # ("count" | "chat", monotonic time), in order
        self.abandoned = 0  # trickled answers whose client hung up before their last byte
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def wait_abandoned(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Whether `count` trickled answers were hung up on by their client within `timeout`."""
        deadline = time.monotonic() + timeout
        while self.abandoned < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.abandoned >= count

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None,
                      trickle: float = 0.0) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                ctype = "text/html" if isinstance(body, bytes) else "application/json"
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if not trickle:
                    self.wfile.write(data)
                    return
                try:
                    for i in range(min(len(data), int(60 / trickle))):  # a minute at most
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(trickle)
                except (BrokenPipeError, ConnectionResetError):  # the bot gave up: as it should
                    with fake._lock:
                        fake.abandoned += 1

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    model = {"id": fake.model, "object": "model", "owned_by": "test"}
                    if fake.max_model_len:
                        model["max_model_len"] = fake.max_model_len
                    self._send(200, {"object": "list", "data": [model]})
                elif self.path == "/metrics" and fake.metrics is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(fake.metrics)))
                    self.end_headers()
                    self.wfile.write(fake.metrics)
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize" and fake.tokenize:
                    with fake._lock:
                        fake.tokenize_calls += 1
                        limited = fake.tokenize_429 > 0 and fake.tokenize_429_skip <= 0
                        fake.tokenize_429 -= limited
                        fake.tokenize_429_skip -= 1
                    if limited:
                        self._send(fake.tokenize_status, {"error": "unavailable"},
                                   {"Retry-After": "0"})
                        return
                    if "messages" in body:
                        time.sleep(fake.count_delay)
                        with fake._lock:
                            fake.events.append(("count", time.monotonic()))
                    n = request_tokens(body) if "messages" in body else count(body["prompt"])
                    answer = {"count": n, "max_model_len": fake.max_model_len, "tokens": []}
                    if not fake.tokenize_count and fake.tokenize_calls > 1:
                        del answer["count"]
                    self._send(200, answer)
                elif self.path == "/v1/chat/completions":
                    self._chat(body)
                else:
                    self._send(404, {"error": "not found"})

            def _chat(self, body: dict[str, Any]) -> None:
                with fake._lock:
                    fake.requests.append(body)
                    fake.events.append(("chat", time.monotonic()))
                    attempt = len(fake.requests)
                prompt = request_tokens(body)
                limit = fake.max_model_len
                if limit and prompt + body.get("max_tokens", 0) > limit:
                    msg = (f"This model's maximum context length is {limit} tokens. However, you "
                           f"requested {prompt + body['max_tokens']} tokens.")
                    self._send(400, {"object": "error", "message": msg, "type": "BadRequestError",
                                     "code": 400})
                    return
                reply = fake.script(body, attempt)
                time.sleep(reply.delay)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.error}}, reply.headers)
                    return
                if reply.raw is not None or reply.body is not None:
                    self._send(200, reply.raw if reply.raw is not None else reply.body,
                               trickle=reply.trickle)
                    return
                # an answer guided by response_format comes as content, as vLLM sends it
                guided = "response_format" in body

                def choice(index: int, tool_args: Any) -> dict[str, Any]:
                    calls, content = [], reply.content
                    if tool_args is not None:
                        args = tool_args if isinstance(tool_args, str) else json.dumps(tool_args)
                        calls = [{"id": f"call_{attempt}_{index}", "type": "function",
                                  "function": {"name": reply.tool_name, "arguments": args}}]
                        if guided or not body.get("tools"):
                            # guided, or findings_format json (no tools sent): the JSON is
                            # the answer's words, as a model writes it
                            calls, content = [], args
                    if body.get("tool_choice") == "none" and not guided:
                        calls = []  # vLLM calls no tool then: the answer is words
                    finish = ("stop" if guided and reply.finish_reason == "tool_calls"
                              else reply.finish_reason)
                    return {"index": index, "finish_reason": finish,
                            "message": {"role": "assistant", "content": content,
                                        "tool_calls": calls}}

                each = reply.samples if reply.samples is not None else [reply.tool_args]
                self._send(200, {
                    "id": f"cmpl-{attempt}", "object": "chat.completion", "created": 0,
                    "model": fake.model,
                    "choices": [choice(i, args) for i, args in enumerate(each)],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": 17,
                              "total_tokens": prompt + 17},
                }, trickle=reply.trickle)

        return Handler


def user_text(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"]


def row_ranges(body: dict[str, Any]) -> list[tuple[int, int]]:
    """The row ranges the tool schema the bot sent admits; without tools (findings_format
    json), the runs of rows the diff in the prompt shows."""
    if not body.get("tools"):
        rows = sorted(int(n) for n in re.findall(r"(?m)^[-+](\d+) ", user_text(body)))
        runs: list[tuple[int, int]] = []
        for n in rows:
            runs[-1:] = ([(runs[-1][0], n)] if runs and runs[-1][1] == n - 1
                         else [*runs[-1:], (n, n)])
        return runs
    report = next(t for t in body["tools"] if t["function"]["name"] == "report_findings")
    row = report["function"]["parameters"]["$defs"]["row"]
    return [(s["minimum"], s["maximum"]) for s in row.get("anyOf", [row])]


def row_of(body: dict[str, Any], needle: str) -> int:
    """The row number the bot showed for the first diff line containing `needle`."""
    for line in user_text(body).split("\n"):
        match = re.match(r"^[-+](\d+) (.*)$", line)
        if match and needle in match.group(2):
            return int(match.group(1))
    raise AssertionError(f"{needle!r} not shown")


def asked(body: dict[str, Any]) -> str:
    """What a request asks for: the forced tool's name, the guided answer's (verification), or
    findings (a free JSON answer)."""
    if "response_format" in body:
        return str(body["response_format"]["json_schema"]["name"])
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    # no tools at all: findings asked for as a free JSON answer (findings_format json)
    return "" if body.get("tools") else "report_findings"
