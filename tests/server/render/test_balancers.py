"""Rendered configs: validated by the real nginx, haproxy and systemd-analyze binaries, then
nginx and HAProxy run in front of a local fake upstream to prove the API-key check, the
per-client rate limit and (HAProxy) the inference health check."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from reviewbot.cli import main
from reviewbot.headers import AFFINITY_HEADER
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import Plan, plan
from reviewbot_server.render.balancers import LbSettings, haproxy_cfg, nginx_conf
from reviewbot_server.render.serve import helm_values
from tests.conftest import TINY_FORMAT

KEY = "sk-test-0123456789"
INSTALL = "install with: apt-get install -y nginx haproxy (systemd provides systemd-analyze)"


def binary(name: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists()
                                  else None)
    if path is None:
        pytest.fail(f"{name} not found: {INSTALL}")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Upstream(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, bytes]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, body))
        payload = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def upstream() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def running(argv: list[str], env: dict[str, str] | None = None) -> Iterator[None]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_ready(url: str, headers: dict[str, str]) -> None:
    for _ in range(100):  # 20 s
        try:
            if httpx.get(url, headers=headers, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} never answered 200")


def one_instance_plan(port: int) -> Plan:
    return plan("1xRTX4090", load_model("Qwen2.5-Coder-7B"), base_port=port)


def check_gate(base: str) -> None:
    """401 without or with a wrong key, 200 with it; /health open; 429 past the burst."""
    assert httpx.get(f"{base}/health").status_code == 200
    assert httpx.get(f"{base}/v1/models").status_code == 401
    assert httpx.get(f"{base}/metrics").status_code == 401
    bad = {"Authorization": "Bearer sk-wrong"}
    assert httpx.get(f"{base}/v1/models", headers=bad).status_code == 401
    good = {"Authorization": f"Bearer {KEY}"}
    codes: list[int] = []
    with httpx.Client(headers=good) as client:  # one keep-alive client, as fast as it goes
        for _ in range(120):  # past both the burst and the 10 s average, even on a slow box
            codes.append(client.get(f"{base}/v1/models").status_code)
            if codes[-1] != 200:
                break
    assert codes[0] == 200 and codes[-1] == 429, codes


def test_nginx_config_passes_nginx_t_and_gates_requests(tmp_path: Path) -> None:
    nginx = binary("nginx")
    keys = tmp_path / "keys.map"
    keys.write_text(f'"Bearer {KEY}" 1;\n')
    with upstream() as port:
        listen = free_port()
        lb = LbSettings(listen=f"127.0.0.1:{listen}", nginx_keys=str(keys),
                        pid_file=str(tmp_path / "nginx.pid"))
        conf = tmp_path / "nginx.conf"
        conf.write_text(nginx_conf(one_instance_plan(port), lb))
        base = [nginx, "-p", str(tmp_path), "-e", "stderr", "-c", str(conf)]
        test = subprocess.run([*base, "-t"], capture_output=True, text=True, check=False)
        assert test.returncode == 0, test.stderr
        with running([*base, "-g", "daemon off;"]):
            wait_ready(f"http://127.0.0.1:{listen}/health", {})
            check_gate(f"http://127.0.0.1:{listen}")


def test_haproxy_config_passes_check_and_probes_with_inference(tmp_path: Path) -> None:
    haproxy = binary("haproxy")
    keys = tmp_path / "keys.lst"
    keys.write_text(f"{KEY}\n")
    _Upstream.seen.clear()
    with upstream() as port:
        listen = free_port()
        lb = LbSettings(listen=f"127.0.0.1:{listen}", haproxy_keys=str(keys))
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(haproxy_cfg(one_instance_plan(port), lb))
        env = {"PATH": "/usr/sbin:/usr/bin:/bin", "VLLM_API_KEY": KEY}
        test = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True,
                              env=env, check=False)
        assert test.returncode == 0, test.stdout + test.stderr
        with running([haproxy, "-db", "-f", str(cfg)], env=env):
            wait_ready(f"http://127.0.0.1:{listen}/health", {})
            check_gate(f"http://127.0.0.1:{listen}")
    probes = [json.loads(body) for method, path, body in _Upstream.seen
              if (method, path) == ("POST", "/v1/completions")]
    assert probes and probes[0]["max_tokens"] == 1


def test_no_secrets_in_rendered_configs() -> None:
    p = one_instance_plan(8001)
    for text in (nginx_conf(p), haproxy_cfg(p), helm_values(p)):
        assert KEY not in text and "Bearer sk" not in text


def test_keyless_variant_for_loopback_demo_is_valid(tmp_path: Path) -> None:
    p = one_instance_plan(18001)
    lb = LbSettings(listen="127.0.0.1:18000", require_key=False,
                    pid_file=str(tmp_path / "nginx.pid"))
    conf, cfg = tmp_path / "nginx.conf", tmp_path / "haproxy.cfg"
    conf.write_text(nginx_conf(p, lb))
    cfg.write_text(haproxy_cfg(p, lb))
    assert "401" not in conf.read_text() and "401" not in cfg.read_text()
    nginx = subprocess.run([binary("nginx"), "-t", "-p", str(tmp_path), "-e", "stderr", "-c",
                            str(conf)], capture_output=True, text=True, check=False)
    assert nginx.returncode == 0, nginx.stderr
    haproxy = subprocess.run([binary("haproxy"), "-c", "-f", str(cfg)], capture_output=True,
                             text=True, check=False)
    assert haproxy.returncode == 0, haproxy.stdout + haproxy.stderr


@pytest.mark.vllm
def test_check_through_rendered_nginx_in_front_of_real_vllm(
    vllm_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rendered balancer passes the key through and streams; a wrong key is refused."""
    nginx = binary("nginx")
    keys = tmp_path / "keys.map"
    keys.write_text(f'"Bearer {KEY}" 1;\n')
    port = httpx.URL(vllm_server.root_url).port
    listen = free_port()
    lb = LbSettings(listen=f"127.0.0.1:{listen}", nginx_keys=str(keys), rate=50, burst=100,
                    pid_file=str(tmp_path / "nginx.pid"))
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_conf(one_instance_plan(port), lb))
    with running([nginx, "-p", str(tmp_path), "-e", "stderr", "-c", str(conf), "-g",
                  "daemon off;"]):
        wait_ready(f"http://127.0.0.1:{listen}/health", {})
        base = f"http://127.0.0.1:{listen}/v1"
        args = ["server", "check", "--base-url", base, "--model", vllm_server.model,
                "--min-context", "1024"]
        with pytest.raises(SystemExit) as ok:
            main([*args, "--api-key", KEY])
        out = capsys.readouterr().out
        assert ok.value.code == 0, out
        with pytest.raises(SystemExit) as refused:
            main([*args, "--api-key", "sk-wrong-key"])
        out = capsys.readouterr().out
        assert refused.value.code == 1 and "401" in out and "sk-wrong-key" not in out, out


@dataclass
class Recorded:
    """One fake engine: its port, its record of (method, path, X-Reviewbot-Review), and `stop`,
    which makes it refuse connections as a killed vLLM does."""

    port: int
    seen: list[tuple[str, str, bytes]]
    server: ThreadingHTTPServer

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def recording_upstreams(n: int) -> Iterator[list[Recorded]]:
    """n fake engines, each with its own record."""
    out = []
    for _ in range(n):
        class Handler(_Upstream):
            record: ClassVar[list[tuple[str, str, bytes]]] = []  # this engine's own

            def _answer(self) -> None:
                self.record.append((self.command, self.path,
                                    (self.headers.get(AFFINITY_HEADER) or "").encode()))
                super()._answer()

            do_GET = do_POST = _answer

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        out.append(Recorded(int(server.server_address[1]), Handler.record, server))
    try:
        yield out
    finally:
        for up in out:
            if up.server.socket.fileno() != -1:
                up.stop()


def two_replica_plan(ports: list[int]) -> Plan:
    p = plan("2xA10", load_model("Qwen2.5-Coder-7B"))
    return replace(p, instances=tuple(replace(i, port=port) for i, port in zip(p.instances, ports)))


def review_traffic(base: str) -> None:
    """What reviews send: per review, a burst of /tokenize calls and chunk requests carrying
    the review's affinity header; every one must pass the default limits."""
    good = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(headers=good, timeout=10) as client:
        for _ in range(200):
            assert client.post(f"{base}/tokenize", json={"prompt": "x"}).status_code == 200
        for review in range(20):
            for _ in range(3):
                r = client.post(f"{base}/v1/chat/completions", json={},
                                headers={AFFINITY_HEADER: f"review-{review:02d}"})
                assert r.status_code == 200, r.status_code
            time.sleep(0.12)  # the 20 reviews arrive over ~3 s, as separate reviews do


def assert_affinity(records: list[list[tuple[str, str, bytes]]]) -> None:
    homes: dict[bytes, set[int]] = {}
    for n, seen in enumerate(records):
        for method, path, key in seen:
            if path == "/v1/chat/completions":
                homes.setdefault(key, set()).add(n)
    assert len(homes) == 20 and all(len(h) == 1 for h in homes.values()), homes
    assert {n for h in homes.values() for n in h} == {0, 1}  # both replicas serve reviews


def balancer(kind: str, p: Plan, tmp_path: Path, listen: int) -> list[str]:
    """The rendered nginx or HAProxy config for `p` at its default limits, checked by the
    binary itself; the argv that runs it in the foreground."""
    if kind == "nginx":
        keys = tmp_path / "keys.map"
        keys.write_text(f'"Bearer {KEY}" 1;\n')
        conf = tmp_path / "nginx.conf"
        conf.write_text(nginx_conf(p, LbSettings(listen=f"127.0.0.1:{listen}",
                                                 nginx_keys=str(keys),
                                                 pid_file=str(tmp_path / "nginx.pid"))))
        assert "open-source nginx checks passively only" in conf.read_text()
        argv = [binary("nginx"), "-p", str(tmp_path), "-e", "stderr", "-c", str(conf)]
        check = subprocess.run([*argv, "-t"], capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr
        return [*argv, "-g", "daemon off;"]
    keys = tmp_path / "keys.lst"
    keys.write_text(f"{KEY}\n")
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(haproxy_cfg(p, LbSettings(listen=f"127.0.0.1:{listen}",
                                             haproxy_keys=str(keys))))
    check = subprocess.run([binary("haproxy"), "-c", "-f", str(cfg)], capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return [binary("haproxy"), "-f", str(cfg)]


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_a_balancer_keeps_a_review_on_one_replica_within_default_limits(
        tmp_path: Path, kind: str) -> None:
    with recording_upstreams(2) as ups:
        listen = free_port()
        argv = balancer(kind, two_replica_plan([u.port for u in ups]), tmp_path, listen)
        with running(argv, env={"VLLM_API_KEY": ""} if kind == "haproxy" else None):
            wait_ready(f"http://127.0.0.1:{listen}/health", {})
            review_traffic(f"http://127.0.0.1:{listen}")
        assert_affinity([u.seen for u in ups])


def chat(client: httpx.Client, base: str, review: str) -> int:
    return client.post(f"{base}/v1/chat/completions", json={},
                       headers={AFFINITY_HEADER: review}).status_code


@pytest.mark.parametrize("kind", ["nginx", "haproxy"])
def test_a_killed_replica_loses_no_request_and_its_reviews_move_whole(
        tmp_path: Path, kind: str) -> None:
    """One replica per GPU (issue 54's first topology): when one replica's vLLM dies, every
    request still gets an answer (nginx tries the next upstream; HAProxy redispatches a refused
    connection until its health check takes the server out), and each review it served goes on
    on one other replica, not scattered."""
    reviews = [f"review-{n:02d}" for n in range(12)]
    with recording_upstreams(2) as ups:
        listen = free_port()
        argv = balancer(kind, two_replica_plan([u.port for u in ups]), tmp_path, listen)
        base = f"http://127.0.0.1:{listen}"
        with running(argv, env={"VLLM_API_KEY": ""} if kind == "haproxy" else None), \
                httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client:
            wait_ready(f"{base}/health", {})
            assert [chat(client, base, r) for r in reviews] == [200] * len(reviews)
            homes = {key.decode(): n for n, u in enumerate(ups)
                     for _, path, key in u.seen if path == "/v1/chat/completions"}
            assert set(homes.values()) == {0, 1}, homes  # both served reviews before
            ups[0].stop()
            before = len(ups[0].seen)
            time.sleep(0.3)  # the reviews go on, a moment later
            after = [chat(client, base, r) for r in reviews for _ in range(2)]
        assert after == [200] * len(after)  # nothing lost to the dead replica
        assert len(ups[0].seen) == before  # and nothing reached it
        chats = [key.decode() for _, path, key in ups[1].seen if path == "/v1/chat/completions"]
        moved = chats[-len(after):]
        assert sorted(set(moved)) == reviews  # every review, its own and the dead one's


@pytest.mark.vllm
def test_a_whole_review_goes_through_the_rendered_nginx_with_default_limits(
    vllm_server: Any, tmp_path: Path
) -> None:
    """A many-chunk review (a 4K context forces a chunk per few files; /tokenize bursts,
    verification passes) against the real vLLM through nginx at its default limits: nothing
    is refused, and the review is complete."""
    from tests.engine.test_real_vllm import big_diff

    nginx = binary("nginx")
    keys = tmp_path / "keys.map"
    keys.write_text(f'"Bearer {KEY}" 1;\n')
    port = httpx.URL(vllm_server.root_url).port
    listen = free_port()
    lb = LbSettings(listen=f"127.0.0.1:{listen}", nginx_keys=str(keys),
                    pid_file=str(tmp_path / "nginx.pid"))
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_conf(one_instance_plan(port), lb))
    diff = tmp_path / "change.diff"
    diff.write_bytes(big_diff(files=40))
    with running([nginx, "-p", str(tmp_path), "-e", "stderr", "-c", str(conf), "-g",
                  "daemon off;"]):
        wait_ready(f"http://127.0.0.1:{listen}/health", {})
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--diff", str(diff), "--base-url",
             f"http://127.0.0.1:{listen}/v1", "--output", "json", "--max-context", "4096",
             "--config", "/dev/null", "--concurrency", "8", "--no-progress", *TINY_FORMAT],
            capture_output=True, text=True, timeout=900,
            env={**os.environ, "REVIEWBOT_API_KEY": KEY})
    assert proc.returncode in (0, 1), proc.stderr
    stats = json.loads(proc.stdout)["stats"]
    assert stats["complete"] is True and stats["chunks"] >= 8, stats
    assert stats["changed_lines_sent"] == stats["changed_lines"]
    assert KEY not in proc.stdout + proc.stderr


ORIGIN_DEPLOYMENTS = {  # the four setups the product was made for
    "4x T10, Qwen3.5-35B-A3B GPTQ, TP=4": ("4xT10", "Qwen3.5-35B-A3B", "gptq", 4, 1),
    "4 nodes x 2x A10, a replica per GPU": ("2xA10", "Qwen2.5-Coder-7B", None, None, 4),
    "one 24 GB card, a big MoE": ("1xRTX4090", "Qwen3-Coder-30B-A3B", "awq", None, 1),
    "one H200": ("1xH200", "Qwen3-Coder-30B-A3B", None, None, 1),
}


def test_origin_deployments_plan_render_and_validate(tmp_path: Path,
                                                    vllm_interpreter: str) -> None:
    """Each plans; its nginx passes `nginx -t`, its HAProxy `haproxy -c`, and every argv
    vLLM's own parser."""
    from tests.server.vllm_flags import check_argvs

    argvs = []
    for n, (name, (gpus, model, quant, tp, nodes)) in enumerate(ORIGIN_DEPLOYMENTS.items()):
        p = plan(gpus, load_model(model), quantization=quant, tensor_parallel_size=tp,
                 nodes=nodes)
        assert p.max_concurrent_reviews >= 1, name
        argvs += [list(i.argv) for i in p.instances[:1]]
        # multi-node plans name placeholder hosts node1…nodeN, which the user replaces
        hosts = {f"node{k + 1}": f"127.0.0.{k + 1}" for k in range(nodes)}
        p = replace(p, instances=tuple(replace(i, host=hosts.get(i.host, i.host))
                                       for i in p.instances))
        keys = tmp_path / f"keys{n}"
        keys.write_text(f'"Bearer {KEY}" 1;\n')
        conf = tmp_path / f"nginx{n}.conf"
        conf.write_text(nginx_conf(p, LbSettings(listen=f"127.0.0.1:{free_port()}",
                                                 nginx_keys=str(keys),
                                                 pid_file=str(tmp_path / f"nginx{n}.pid"))))
        check = subprocess.run([binary("nginx"), "-t", "-p", str(tmp_path), "-e", "stderr",
                                "-c", str(conf)], capture_output=True, text=True, check=False)
        assert check.returncode == 0, (name, check.stderr)
        cfg = tmp_path / f"haproxy{n}.cfg"
        cfg.write_text(haproxy_cfg(p, LbSettings(listen=f"127.0.0.1:{free_port()}",
                                                 haproxy_keys=str(keys))))
        check = subprocess.run([binary("haproxy"), "-c", "-f", str(cfg)], capture_output=True,
                               text=True, check=False)
        assert check.returncode == 0, (name, check.stdout + check.stderr)
    result = check_argvs(vllm_interpreter, argvs)
    assert result["errors"] == [], result["errors"]
