"""`server up` on a host of several GPUs: one launch spec per planned instance on its own port
(one instance serves on the client port itself), and a real nginx in front that keeps a
review's requests on one instance, as the rendered balancers do, and spreads the others."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from reviewbot.headers import AFFINITY_HEADER
from reviewbot_server.process.launcher import LaunchSpec, free_port
from reviewbot_server.supervise.specs import gpu_specs, nginx_for
from tests.server.render.test_balancers import binary

QWEN_7B = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944,
           "vocab_size": 152064, "max_position_embeddings": 32768}


def _model(tmp_path: Path) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(QWEN_7B))
    return tmp_path


def test_one_spec_per_instance_on_the_ports_after_the_client_port(tmp_path: Path) -> None:
    specs = gpu_specs("2xA10", _model(tmp_path), "qwen", 32768, 9000, ("--seed", "1"))
    assert [(name, s.port) for name, s in specs.items()] == [("gpu0", 9001), ("gpu1", 9002)]
    assert all(s.extra_args[-2:] == ("--seed", "1") for s in specs.values())
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs.values()] == ["0", "1"]


def test_a_single_instance_serves_on_the_client_port(tmp_path: Path) -> None:
    (spec,) = gpu_specs("1xH100", _model(tmp_path), "qwen", 32768, 9000, ()).values()
    assert spec.port == 9000


@contextmanager
def _instance(name: str) -> Iterator[int]:
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(name)))
            self.end_headers()
            self.wfile.write(name.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_nginx_keeps_a_review_on_one_instance_and_spreads_the_rest(tmp_path: Path) -> None:
    binary("nginx")
    with _instance("a") as a, _instance("b") as b:
        specs = {"gpu0": LaunchSpec(tmp_path, a), "gpu1": LaunchSpec(tmp_path, b)}
        port = free_port()
        nginx = nginx_for(specs, port, tmp_path / "state")
        nginx.start()
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
                for _ in range(100):  # nginx is up once it answers
                    try:
                        client.get("/")
                        break
                    except httpx.TransportError:
                        threading.Event().wait(0.1)

                def served(review: str | None) -> str:
                    headers = {AFFINITY_HEADER: review} if review else {}
                    return client.get("/v1/models", headers=headers).text

                for review in ("r1", "r2", "r3", "r4"):
                    assert len({served(review) for _ in range(6)}) == 1, review
                assert len({served(f"review-{n}") for n in range(40)}) == 2
                assert len({served(None) for _ in range(40)}) == 2
        finally:
            nginx.stop()
