"""The supervisor's own endpoint on a real port: /status as given, /healthz 503 until an
instance is ready, /metrics from the instance events and the load each read reports, and a
port in use refused in one line."""

from __future__ import annotations

import socket

import httpx
import pytest

from reviewbot_server.errors import UsageError
from reviewbot_server.process.launcher import free_port
from reviewbot_server.supervise.status_app import Metrics, StatusServer, build_app
from reviewbot_server.supervise.supervisor import InstanceState


def _instance(name: str, state: str, kv: float | None = None) -> dict[str, object]:
    return {"name": name, "state": state, "kv_cache_usage": kv, "requests_running": 2 if kv
            else None, "requests_waiting": 0 if kv else None}


def test_status_health_and_metrics_follow_the_instances() -> None:
    shown: dict[str, object] = {"instances": [_instance("i0", "starting")]}
    metrics = Metrics()
    server = StatusServer(build_app(lambda: shown, metrics), free_port())
    server.start()
    try:
        assert httpx.get(server.url + "/status").json() == shown
        assert httpx.get(server.url + "/healthz").status_code == 503
        metrics.state("i0", InstanceState.READY)
        metrics.restart("i0", "hung")
        metrics.canary("i0", ok=False, latency_s=0.3)
        shown["instances"] = [_instance("i0", "ready", kv=0.25)]
        health = httpx.get(server.url + "/healthz")
        assert health.status_code == 200 and health.json() == {"ready": 1}
        text = httpx.get(server.url + "/metrics").text
    finally:
        server.stop()
    assert 'reviewbot_supervisor_instance_ready{instance="i0"} 1.0' in text
    assert 'reviewbot_supervisor_instance_state{instance="i0",state="starting"} 0.0' in text
    assert 'reviewbot_supervisor_restarts_total{instance="i0",reason="hung"} 1.0' in text
    assert 'reviewbot_supervisor_canary_failures_total{instance="i0"} 1.0' in text
    assert 'reviewbot_supervisor_kv_cache_usage_ratio{instance="i0"} 0.25' in text
    assert 'reviewbot_supervisor_requests_running{instance="i0"} 2.0' in text


def test_two_supervisors_in_one_process_keep_their_own_metrics() -> None:
    first, second = Metrics(), Metrics()
    first.restart("i0", "exited")
    assert second.restarts.labels("i0", "exited")._value.get() == 0


def test_a_port_in_use_is_a_usage_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = StatusServer(build_app(lambda: {"instances": []}, Metrics()),
                              taken.getsockname()[1])
        with pytest.raises(UsageError, match="cannot listen on http://127.0.0.1:"):
            server.start(timeout=5)
