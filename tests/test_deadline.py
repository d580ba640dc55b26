"""Wall-clock limits on HTTP calls (reviewbot.deadline), against a real local server that
trickles its answer: httpx's per-read timeouts alone would wait for every byte."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from reviewbot.deadline import at_most, bounded_client, until


class _Trickle(BaseHTTPRequestHandler):
    """/slow: headers, then a byte every 0.1 s for 20 s; /big: 100 kB at once."""

    def do_GET(self) -> None:
        big = self.path == "/big"
        self.send_response(200)
        self.send_header("Content-Length", str(100_000 if big else 200))
        self.end_headers()
        if big:
            self.wfile.write(b"x" * 100_000)
            return
        try:
            for _ in range(200):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client gave up: what the test wants
            pass

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_trickling_answer_ends_at_the_clients_timeout() -> None:
    with _server() as url, bounded_client(1.0) as client:
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout, match="still arriving at its deadline"):
            client.get(f"{url}/slow")
        assert time.monotonic() - started < 3  # not the 20 s the bytes would take


def test_the_callers_deadline_wins_when_it_is_sooner() -> None:
    with _server() as url, bounded_client(60.0) as client:
        started = time.monotonic()
        with until(time.monotonic() + 0.5), pytest.raises(httpx.ReadTimeout):
            client.get(f"{url}/slow")
        assert time.monotonic() - started < 2.5
        with until(time.monotonic() - 1), pytest.raises(httpx.ReadTimeout, match="before"):
            client.get(f"{url}/big")  # already past: nothing is sent


def test_a_body_is_read_up_to_the_bound_and_no_further() -> None:
    with _server() as url, bounded_client(10.0) as client:
        with at_most(1000):
            cut = client.get(f"{url}/big")
        whole = client.get(f"{url}/big")
    assert len(cut.content) == 1000 and len(whole.content) == 100_000
