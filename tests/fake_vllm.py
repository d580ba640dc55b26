"""A stand-in for `python -m vllm.entrypoints.openai.api_server …` in supervisor fault tests.

Called with the launcher's argv (it ignores `-m MODULE`); FAKE_VLLM_MODE picks the fault:
  ok            serve at once
  slow:SECONDS  load for that long before listening
  crash         print a vLLM-like error and exit 1 during startup
  badflag       print vLLM's argparse error and exit 2
  never_ready   listen, but answer every inference request with 503
Serves /v1/models, /v1/completions, /v1/chat/completions, /metrics, /health. stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _opt(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv: list[str]) -> int:
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    port = int(_opt(argv, "--port", "8000"))
    host = _opt(argv, "--host", "127.0.0.1")
    model = _opt(argv, "--served-model-name", "tiny")
    max_len = int(_opt(argv, "--max-model-len", "65536"))
    print(f"INFO fake vllm pid={os.getpid()} mode={mode} args={' '.join(argv)}", flush=True)
    if mode == "badflag":  # what vLLM's argparse prints
        print("api_server.py: error: unrecognized arguments: --bogus", flush=True)
        return 2
    if mode == "crash":
        print("RuntimeError: Unsupported CPU attention configuration: head_dim=16 isa=2",
              flush=True)
        return 1
    if mode.startswith("slow:"):
        time.sleep(float(mode.split(":", 1)[1]))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            print("INFO " + format % args, flush=True)

        def _send(self, status: int, body: object, ctype: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [
                    {"id": model, "object": "model", "max_model_len": max_len}]})
            elif self.path == "/metrics":
                self._send(200, "# TYPE vllm:num_requests_running gauge\n"
                           f'vllm:num_requests_running{{model_name="{model}"}} 0.0\n'
                           "# TYPE vllm:num_requests_waiting gauge\n"
                           f'vllm:num_requests_waiting{{model_name="{model}"}} 1.0\n'
                           "# TYPE vllm:gpu_cache_usage_perc gauge\n"  # an older name
                           f'vllm:gpu_cache_usage_perc{{model_name="{model}"}} 0.25\n',
                           "text/plain; version=0.0.4")
            elif self.path == "/health":
                self._send(200, "")
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if mode == "never_ready":
                self._send(503, {"error": {"message": "engine not ready"}})
            elif self.path == "/v1/completions":
                self._send(200, {"choices": [{"index": 0, "text": " x",
                                              "finish_reason": "length"}]})
            elif self.path == "/v1/chat/completions":
                call = {"id": "c1", "type": "function",
                        "function": {"name": "canary", "arguments": '{"ok": true}'}}
                self._send(200, {"choices": [{"index": 0, "finish_reason": "tool_calls",
                                              "message": {"role": "assistant",
                                                          "tool_calls": [call]}}]})
            else:
                self._send(404, {"error": "not found"})

    server = ThreadingHTTPServer((host, port), Handler)
    print("INFO:     Application startup complete.", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
