"""The supervisor's own HTTP endpoint (loopback): /status JSON, /metrics, /healthz.

Runs uvicorn in a thread (uvicorn installs signal handlers only in the main thread, which
stays the supervisor's). Metrics live in a private registry, so several supervisors in one
process (tests) do not collide.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import uvicorn
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reviewbot_server.errors import UsageError
from reviewbot_server.supervise.supervisor import STATES, Events, InstanceState

StatusFn = Callable[[], dict[str, object]]


class Metrics(Events):
    """The supervisor's Prometheus metrics, fed by instance events and each status read."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.states = Gauge("reviewbot_supervisor_instance_state",
                           "1 for the state the instance is in", ["instance", "state"], registry=r)
        self.up = Gauge("reviewbot_supervisor_instance_ready",
                        "1 when the instance passed its last canary", ["instance"], registry=r)
        self.restarts = Counter("reviewbot_supervisor_restarts",
                                "Restarts, by reason (exited, hung, start_failed)",
                                ["instance", "reason"], registry=r)
        self.canary_latency = Histogram(
            "reviewbot_supervisor_canary_seconds", "Canary latency", ["instance"], registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.canary_failures = Counter("reviewbot_supervisor_canary_failures",
                                       "Failed canaries", ["instance"], registry=r)
        self.kv = Gauge("reviewbot_supervisor_kv_cache_usage_ratio",
                        "vLLM KV-cache usage (0-1)", ["instance"], registry=r)
        self.running = Gauge("reviewbot_supervisor_requests_running",
                             "vLLM requests running", ["instance"], registry=r)
        self.waiting = Gauge("reviewbot_supervisor_requests_waiting",
                             "vLLM requests waiting", ["instance"], registry=r)

    # Events
    def state(self, name: str, state: InstanceState) -> None:
        for s in STATES:
            self.states.labels(name, s).set(1 if s is state else 0)
        self.up.labels(name).set(1 if state is InstanceState.READY else 0)

    def restart(self, name: str, reason: str) -> None:
        self.restarts.labels(name, reason).inc()

    def canary(self, name: str, ok: bool, latency_s: float) -> None:
        self.canary_latency.labels(name).observe(latency_s)
        if not ok:
            self.canary_failures.labels(name).inc()

    def observe_load(self, status: dict[str, object]) -> None:
        for inst in status["instances"]:  # type: ignore[attr-defined]
            for gauge, key in ((self.kv, "kv_cache_usage"), (self.running, "requests_running"),
                               (self.waiting, "requests_waiting")):
                if inst[key] is not None:
                    gauge.labels(inst["name"]).set(inst[key])


def build_app(status: StatusFn, metrics: Metrics) -> Starlette:
    async def status_route(request: Request) -> JSONResponse:
        return JSONResponse(status())

    async def metrics_route(request: Request) -> Response:
        metrics.observe_load(status())
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def healthz(request: Request) -> JSONResponse:
        ready = [i for i in status()["instances"]  # type: ignore[attr-defined]
                 if i["state"] == InstanceState.READY]
        return JSONResponse({"ready": len(ready)}, status_code=200 if ready else 503)

    return Starlette(routes=[
        Route("/status", status_route), Route("/metrics", metrics_route),
        Route("/healthz", healthz),
    ])


class StatusServer:
    """uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Starlette, port: int, host: str = "127.0.0.1") -> None:
        config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                                access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="status-http", daemon=True)
        self.host, self.port = host, port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            self.server.run()
        except SystemExit:  # uvicorn's way to say it could not listen: start() says it
            pass

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise UsageError(f"the status endpoint cannot listen on {self.url} (port in use?)")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10.0)
