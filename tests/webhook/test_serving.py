"""How the listener serves: a client that trickles its headers or its body is cut off (uvicorn has
no header read timeout of its own), and a normal client is still served."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx

from tests.webhook.recording_runner import RecordingRunner
from tests.webhook.webhook_support import (
    ThreadServer,
    gitlab_event,
    make_settings,
)


def _raw(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.settimeout(10)
    return sock


def _closed_after(sock: socket.socket, trickle: bytes, limit: float) -> tuple[bool, bytes]:
    """Send `trickle` a byte every 0.2 s for `limit` seconds at most: whether the server ended
    the connection first (not a wall-clock bound, which a loaded machine blurs), and its answer."""
    started = time.monotonic()
    answer, closed = b"", False
    for byte in trickle:
        if time.monotonic() - started > limit:
            break
        try:
            sock.sendall(bytes([byte]))
            sock.settimeout(0.2)
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            closed = True
            break
        answer += data
        closed = True  # an answer, or b"": the server's end
        break
    sock.settimeout(5)
    try:
        while data := sock.recv(4096):
            answer += data
    except OSError:
        pass
    return closed, answer


def test_slow_headers_and_slow_bodies_are_cut_off(tmp_path: Path, runner: RecordingRunner) -> None:
    settings = make_settings(tmp_path / "q.sqlite", header_timeout_s=1.0, body_timeout_s=1.0)
    headers, body = gitlab_event()
    head = "POST /webhook/gitlab HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + f"Content-Length: {len(body)}\r\n\r\n"
    with ThreadServer(settings, runner) as srv:
        with _raw(srv.port) as sock:  # the headers, one byte at a time, never finished
            closed, answer = _closed_after(
                sock, b"POST /webhook/gitlab HTTP/1.1\r\nX-A: " + b"a" * 60, limit=8)
        assert closed and answer == b"", answer
        with _raw(srv.port) as sock:  # the headers at once, then the body trickles
            sock.sendall(head.encode())
            closed, answer = _closed_after(sock, body, limit=8)
        assert closed and answer.startswith(b"HTTP/1.1 408"), answer[:80]
        with httpx.Client(base_url=srv.url) as c:  # a normal client is still served
            assert c.post("/webhook/gitlab", content=body, headers=headers).status_code == 202
            metrics = c.get("/metrics").text
    assert 'reviewbot_webhook_events_rejected_total{forge="gitlab",reason="body_timeout"} 1.0' \
        in metrics
