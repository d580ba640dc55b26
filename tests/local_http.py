"""A real HTTP server on 127.0.0.1 whose every answer a test writes: for the clients' own rules
(retries, refusals, odd bodies) where no fake forge or model server is needed."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest


@dataclass(frozen=True)
class Asked:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    body: bytes | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)


class LocalServer:
    """Every request kept in `asked`, answered by `answer(request)`."""

    def __init__(self, answer: Callable[[Asked], Answer]) -> None:
        self.answer = answer
        self.asked: list[Asked] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                request = Asked(self.command, self.path, dict(self.headers.items()),
                                self.rfile.read(size))
                server.asked.append(request)
                reply = server.answer(request)
                data = (reply.body if isinstance(reply.body, bytes)
                        else json.dumps(reply.body).encode())
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


Start = Callable[[Callable[[Asked], Answer]], LocalServer]  # the fixture's type


@pytest.fixture
def local_server() -> Iterator[Start]:
    """`local_server(answer)` starts one; every one started is stopped after the test."""
    started: list[LocalServer] = []

    def start(answer: Callable[[Asked], Answer]) -> LocalServer:
        started.append(LocalServer(answer).__enter__())
        return started[-1]

    yield start
    for server in started:
        server.__exit__()
