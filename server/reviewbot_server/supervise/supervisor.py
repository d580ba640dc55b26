"""Keep vLLM instances serving: start, prove readiness by inference, watch, restart, stop.

One thread per instance runs a bounded state machine:

    starting ──canary ok──▶ ready ──process exited / canary failed N times──▶ restarting
        │                     ▲                                                  │
        └─exit or timeout─────┴─────────────── backoff (exp + jitter) ◀──────────┘
    K short lives in a row ──▶ crashloop (retries go on at the longest backoff)
    shutdown ──▶ draining ──▶ stopping (SIGTERM → grace → SIGKILL of the group) ──▶ stopped

The vLLM process is spawned from that long-lived thread, so PR_SET_PDEATHSIG in the keeper
(`_reaper.py`) fires only when the supervisor itself dies.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import httpx

from reviewbot_server.deadline import bounded_client
from reviewbot_server.errors import LaunchError, UsageError
from reviewbot_server.process.launcher import LaunchSpec, VllmProcess
from reviewbot_server.supervise.canary import (
    WARM_UP_BURST,
    WARM_UP_TOKENS,
    EngineLoad,
    fetch_load,
    run_canary,
    warm_up,
)

log = logging.getLogger("reviewbot.supervisor")

class InstanceState(StrEnum):
    """An instance's state, as `status` shows it."""

    STARTING = "starting"
    READY = "ready"
    UNHEALTHY = "unhealthy"
    RESTARTING = "restarting"
    CRASHLOOP = "crashloop"  # given up: it never stayed up
    DRAINING = "draining"
    STOPPING = "stopping"
    STOPPED = "stopped"


STATES = tuple(InstanceState)


@dataclass(frozen=True)
class SupervisorSettings:
    """Timings; tests shrink them, production keeps the defaults."""

    state_dir: Path
    startup_timeout_s: float = 900.0  # model load + compile; minutes on big models
    # A hang is detected within 2 × (interval + timeout) = 50 s, so a hung engine serves again
    # within about two minutes on the CPU build. A slow canary on an engine whose token
    # counters still grow (a saturated server) does not count as a failure.
    canary_interval_s: float = 10.0
    canary_timeout_s: float = 15.0
    canary_failures: int = 2  # consecutive failed canaries before a restart
    backoff_initial_s: float = 2.0
    backoff_max_s: float = 120.0
    backoff_jitter: float = 0.25  # ± fraction, so several instances do not restart in step
    crashloop_after: int = 4  # lives in a row that each ended within stable_after_s
    stable_after_s: float = 300.0  # a life this long resets the failure count
    drain_timeout_s: float = 30.0
    stop_grace_s: float = 20.0
    poll_s: float = 0.5  # how often a dead process is noticed
    vllm_python: str | None = None
    warm_up_tokens: tuple[int, ...] = WARM_UP_TOKENS  # one forced call each before ready
    warm_up_burst: int = WARM_UP_BURST  # then this many calls at once
    warm_up_timeout_s: float = 120.0  # per call


@dataclass
class InstanceStatus:
    """What `status` reports; written by the instance thread, read under its lock."""

    name: str
    url: str
    state: InstanceState = InstanceState.STOPPED
    pid: int | None = None
    vllm_pid: int | None = None
    restarts: int = 0
    consecutive_failures: int = 0  # lives shorter than stable_after_s, in a row
    ready_since: float | None = None  # time.time()
    last_error: str = ""
    last_log_lines: list[str] = field(default_factory=list)
    canary_latency_s: float | None = None
    canary_tool_call_parsed: bool | None = None
    warm_up_s: dict[str, float | None] = field(default_factory=dict)  # prompt tokens -> s
    load: EngineLoad | None = None
    next_start_at: float | None = None

    def as_json(self) -> dict[str, object]:
        now = time.time()
        load = self.load or EngineLoad()
        return {
            "name": self.name,
            "url": self.url,
            "state": self.state,
            "pid": self.pid,
            "vllm_pid": self.vllm_pid,
            "restarts": self.restarts,
            "consecutive_failures": self.consecutive_failures,
            "uptime_s": round(now - self.ready_since, 1) if self.ready_since else None,
            "last_error": self.last_error,
            "last_log_lines": list(self.last_log_lines),
            "canary_latency_s": self.canary_latency_s,
            "canary_tool_call_parsed": self.canary_tool_call_parsed,
            "warm_up_s": dict(self.warm_up_s),
            "kv_cache_usage": load.kv_cache_usage,
            "requests_running": load.requests_running,
            "requests_waiting": load.requests_waiting,
            "next_start_in_s": round(self.next_start_at - now, 1) if self.next_start_at else None,
        }


class Events:
    """Hooks for metrics; the default does nothing."""

    def state(self, name: str, state: InstanceState) -> None: ...
    def restart(self, name: str, reason: str) -> None: ...
    def canary(self, name: str, ok: bool, latency_s: float) -> None: ...


def backoff_delay(failures: int, settings: SupervisorSettings, rng: random.Random) -> float:
    base = min(settings.backoff_max_s, settings.backoff_initial_s * 2 ** max(0, failures - 1))
    return float(base * (1 + rng.uniform(-settings.backoff_jitter, settings.backoff_jitter)))


class Instance:
    """One supervised vLLM server."""

    def __init__(
        self, name: str, spec: LaunchSpec, settings: SupervisorSettings, events: Events,
        shutdown: threading.Event, rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self.settings = settings
        self.events = events
        self.shutdown = shutdown
        self.rng = rng or random.Random()
        self.status = InstanceStatus(name=name, url=f"{spec.root_url}/v1")
        self.lock = threading.Lock()
        self.process: VllmProcess | None = None
        self.thread = threading.Thread(target=self.run, name=f"instance-{name}", daemon=True)
        self.ever_ready = False
        self.permanent_failure = False
        self.life_started = time.monotonic()

    # -- status ----------------------------------------------------------------------------
    def snapshot(self) -> dict[str, object]:
        with self.lock:
            if self.process is not None:
                self.status.vllm_pid = self.process.vllm_pid
            return self.status.as_json()

    def _set(self, **changes: object) -> None:
        with self.lock:
            before = (self.status.state, self.status.last_error)
            for key, value in changes.items():
                setattr(self.status, key, value)
            after = (self.status.state, self.status.last_error)
        # a change of state (or of why) is news; "ready" again after every probe is not
        if "state" in changes and after != before:
            log.info("%s: %s%s", self.name, changes["state"],
                     f" ({changes['last_error']})" if changes.get("last_error") else "")
            self.events.state(self.name, after[0])

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> None:
        client = bounded_client(self.settings.canary_timeout_s)  # each call: its own limit
        try:
            while not self.shutdown.is_set():
                reason = self._one_life(client)
                if self.shutdown.is_set():
                    break
                self._after_failure(reason)
        finally:
            client.close()
            self._set(state=InstanceState.STOPPED, pid=None, vllm_pid=None, ready_since=None)

    def _one_life(self, client: httpx.Client) -> str:
        """Start, become ready, serve until something fails; returns why it ended."""
        self.process = VllmProcess(
            self.spec, log_path=self.settings.state_dir / "logs" / f"{self.name}.log",
            python=self.settings.vllm_python, stop_grace=self.settings.stop_grace_s,
        )
        self._set(state=InstanceState.STARTING, next_start_at=None)
        self.life_started = time.monotonic()
        try:
            self.process.start()
        except UsageError as exc:  # e.g. the port is taken by someone else
            self._set(last_error=str(exc), last_log_lines=[])
            return "start failed"
        self._set(pid=self.process.pid)
        try:
            if not self._become_ready(client):
                return "shutdown"
            self._serve(client)
            return self.status.last_error
        except LaunchError as exc:
            self._set(last_error=str(exc), last_log_lines=exc.log_tail)
            self.permanent_failure = exc.permanent and not self.ever_ready
            return "start failed"
        finally:
            self._stop_process(client)

    def _become_ready(self, client: httpx.Client) -> bool:
        """Wait for the server and a passing canary; raise LaunchError otherwise."""
        assert self.process is not None
        deadline = time.monotonic() + self.settings.startup_timeout_s
        while not self.shutdown.is_set():
            if self.process.poll() is not None:
                raise self.process.launch_error("vLLM exited during startup")
            if time.monotonic() > deadline:
                raise self.process.launch_error(
                    f"not ready within {self.settings.startup_timeout_s:g} s")
            result = run_canary(client, self.spec.root_url, self.spec.served_model_name,
                                self.settings.canary_timeout_s)
            if result.ok:  # warmed first, after every start: no review pays the compile
                warmed = warm_up(client, self.spec.root_url, self.spec.served_model_name,
                                 self.settings.warm_up_tokens, self.spec.max_model_len,
                                 self.settings.warm_up_timeout_s, self.settings.warm_up_burst)
                self.ever_ready = True
                self._set(state=InstanceState.READY, ready_since=time.time(), last_error="", warm_up_s=warmed,
                          canary_latency_s=round(result.latency_s, 3),
                          canary_tool_call_parsed=result.tool_call_parsed)
                self.events.canary(self.name, True, result.latency_s)
                return True
            self.shutdown.wait(min(2.0, self.settings.canary_interval_s))
        return False

    def _serve(self, client: httpx.Client) -> None:
        """Watch a ready server until it dies or fails its canary too often."""
        assert self.process is not None
        failures = 0
        next_canary = time.monotonic() + self.settings.canary_interval_s
        while not self.shutdown.wait(self.settings.poll_s):
            code = self.process.poll()
            if code is not None:
                self._set(last_error=f"vLLM exited (code {code})",
                          last_log_lines=self.process.tail())
                return
            if time.monotonic() < next_canary:
                continue
            result = run_canary(client, self.spec.root_url, self.spec.served_model_name,
                                self.settings.canary_timeout_s)
            self.events.canary(self.name, result.ok, result.latency_s)
            next_canary = time.monotonic() + self.settings.canary_interval_s
            if result.ok:
                failures = 0
                load = fetch_load(client, self.spec.root_url, self.settings.canary_timeout_s)
                self._set(state=InstanceState.READY, canary_latency_s=round(result.latency_s, 3),
                          canary_tool_call_parsed=result.tool_call_parsed, load=load)
                continue
            load = fetch_load(client, self.spec.root_url, min(5.0, self.settings.canary_timeout_s))
            if _made_progress(self.status.load, load):  # saturated, not hung: wait
                self._set(state=InstanceState.READY, load=load, last_error=f"busy: {result.error}")
                continue
            failures += 1
            self._set(state=InstanceState.UNHEALTHY, last_error=f"canary failed: {result.error}")
            if failures >= self.settings.canary_failures:
                self._set(last_error=f"hung: {failures} canaries failed, last: {result.error}",
                          last_log_lines=self.process.tail())
                return

    def _after_failure(self, reason: str) -> None:
        stable = time.monotonic() - self.life_started >= self.settings.stable_after_s
        with self.lock:
            self.status.restarts += 1
            failed = self.status.consecutive_failures = (
                1 if stable else self.status.consecutive_failures + 1)
        self.events.restart(self.name, _reason_label(reason))
        # A bad flag fails the same way every time: report it now, not after K restarts.
        crashloop = failed >= self.settings.crashloop_after or self.permanent_failure
        delay = backoff_delay(max(failed, 1), self.settings, self.rng)
        if crashloop:
            delay = self.settings.backoff_max_s
        self._set(state=InstanceState.CRASHLOOP if crashloop else InstanceState.RESTARTING, ready_since=None,
                  next_start_at=time.time() + delay, pid=None, vllm_pid=None)
        log.warning("%s: %s; next start in %.1f s", self.name, self.status.last_error or reason,
                    delay)
        if crashloop:
            log.error("%s: crash loop (%d failures in a row): %s\n%s", self.name, failed,
                      self.status.last_error, "\n".join(self.status.last_log_lines))
        self.shutdown.wait(delay)

    def _stop_process(self, client: httpx.Client) -> None:
        process = self.process
        if process is None:
            return
        if self.shutdown.is_set() and process.poll() is None and self.status.state is InstanceState.READY:
            self._set(state=InstanceState.DRAINING)
            self._drain(client)
        self._set(state=InstanceState.STOPPING)
        process.stop(self.settings.stop_grace_s)
        with self.lock:
            self.status.last_log_lines = process.tail()
            self.status.ready_since = None

    def _drain(self, client: httpx.Client) -> None:
        """Wait until no request is running or waiting (or the drain timeout)."""
        deadline = time.monotonic() + self.settings.drain_timeout_s
        while time.monotonic() < deadline:
            load = fetch_load(client, self.spec.root_url, 5.0)
            if load is None or not (load.requests_running or load.requests_waiting):
                return
            time.sleep(0.5)


def _made_progress(before: EngineLoad | None, now: EngineLoad | None) -> bool:
    """A canary can time out behind long prompts; token counters that grow mean a busy
    engine, not a hung one. A stopped process does not even answer /metrics."""
    if before is None or now is None or before.tokens_total is None:
        return False
    return now.tokens_total is not None and now.tokens_total > before.tokens_total


def _reason_label(reason: str) -> str:
    if reason.startswith("hung"):
        return "hung"
    if reason.startswith("vLLM exited"):
        return "exited"
    return "start_failed"


class Supervisor:
    """Owns the instances; `run()` blocks until `shutdown` is set, then stops them all."""

    def __init__(
        self, specs: dict[str, LaunchSpec], settings: SupervisorSettings,
        events: Events | None = None,
    ) -> None:
        self.settings = settings
        self.shutdown = threading.Event()
        self.events = events or Events()
        self.started = time.time()
        self.instances = [
            Instance(name, spec, settings, self.events, self.shutdown)
            for name, spec in specs.items()
        ]

    def start(self) -> None:
        for instance in self.instances:
            instance.thread.start()

    def stop(self, timeout: float | None = None) -> bool:
        """Signal shutdown and wait for every instance; True when all stopped in time."""
        self.shutdown.set()
        s = self.settings
        limit = timeout if timeout is not None else s.drain_timeout_s + s.stop_grace_s + 30
        deadline = time.monotonic() + limit
        for instance in self.instances:
            instance.thread.join(max(0.0, deadline - time.monotonic()))
        return not any(i.thread.is_alive() for i in self.instances)

    def status(self) -> dict[str, object]:
        return {
            "supervisor": {"uptime_s": round(time.time() - self.started, 1)},
            "instances": [i.snapshot() for i in self.instances],
        }

    def wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            if self.shutdown.wait(0.2):
                return predicate()
        return False

    def given_up(self) -> bool:
        """Every instance crash-looped without ever being ready: a config that never worked."""
        return all(i.status.state is InstanceState.CRASHLOOP and not i.ever_ready for i in self.instances)
