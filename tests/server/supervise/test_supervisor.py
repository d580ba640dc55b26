"""`reviewbot server up` as a real process: fault cases with a fake vLLM, then the real one.

The fake (tests/fake_vllm.py) comes in through `--vllm-python`, exactly where the real
interpreter would; the real-vLLM tests (marked `vllm`) start the CPU build with the tiny
model three times in all (about a minute each on 2 cores).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from reviewbot_server.process.launcher import free_port, group_members
from reviewbot_server.supervise.canary import EngineLoad, parse_load
from reviewbot_server.supervise.supervisor import SupervisorSettings, _made_progress, backoff_delay
from reviewbot_server.tinymodel import SERVE_ARGS, SERVE_ENV
from tests.conftest import TINY_FORMAT

FAKE = Path(__file__).parents[2] / "fake_vllm.py"
SAMPLE_DIFF = Path(__file__).parents[3] / "reviewbot" / "data" / "sample.diff"
# Short timings, with room for a loaded 2-core CI machine (a false "hung" would restart).
FAST = ["--canary-interval", "0.5", "--canary-timeout", "5", "--canary-failures", "2",
        "--backoff-initial", "0.2", "--backoff-max", "1", "--stop-grace", "5",
        "--drain-timeout", "2"]


def _fake_python(tmp_path: Path) -> str:
    """A stand-in for vLLM's interpreter: runs the fake server, and answers `server up`'s
    preflight probe (`-c …find_spec('vllm')…`) as an interpreter with vLLM would."""
    script = tmp_path / "fake-python"
    script.write_text(f'#!/bin/sh\n[ "$1" = "-c" ] && exit 0\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    script.chmod(0o755)
    if not (tmp_path / "config.json").exists():  # the model dir the fake tests pass
        (tmp_path / "config.json").write_text("{}")
        (tmp_path / "tokenizer.json").write_text("{}")
    return str(script)


def _fake_nvidia_smi(tmp_path: Path, gpus: int) -> dict[str, str]:
    """PATH with an nvidia-smi that lists `gpus` GPUs, for plans on a machine without any."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo {i}\n" for i in range(gpus)))
    smi.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


class Up:
    """`reviewbot server up …` in a subprocess, with its status endpoint."""

    def __init__(self, args: list[str], state_dir: Path, env: dict[str, str] | None = None,
                 port: int | None = None):
        self.status_port = free_port()
        self.port = port or free_port()
        self.state_dir = state_dir
        argv = [sys.executable, "-c", "from reviewbot.cli import main; main()", "server", "up",
                "--port", str(self.port), "--state-dir", str(state_dir),
                "--status-port", str(self.status_port), *args]
        self.proc = subprocess.Popen(argv, env={**os.environ, **(env or {})},
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def status(self) -> dict[str, object] | None:
        try:
            resp = httpx.get(f"http://127.0.0.1:{self.status_port}/status", timeout=5)
        except httpx.TransportError:
            return None
        return resp.json()  # type: ignore[no-any-return]

    def instance(self) -> dict[str, object]:
        status = self.status()
        assert status is not None, "supervisor status endpoint is down"
        return status["instances"][0]  # type: ignore[index,no-any-return]

    def wait_for(self, what: str, check: Callable[[dict[str, object]], bool],
                 timeout: float) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        last: dict[str, object] | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                # a supervisor that gave up leaves its instances' last state behind: a state
                # held for less than a poll is still seen, whatever the machine's load
                gave_up = self.state_dir / "gave-up.json"
                final = json.loads(gave_up.read_text())["instances"] if gave_up.is_file() \
                    else None
                if final and check(final[0]):
                    return final[0]  # type: ignore[no-any-return]
                pytest.fail(f"supervisor exited ({self.proc.returncode}) waiting for {what}: "
                            f"{self.proc.stderr.read() if self.proc.stderr else ''}")
            status = self.status()
            if status is not None:
                last = status["instances"][0]  # type: ignore[index]
                if check(last):  # type: ignore[arg-type]
                    return last  # type: ignore[return-value]
            time.sleep(0.3)
        pytest.fail(f"timed out after {timeout} s waiting for {what}; last status: {last}")

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
            pytest.fail(f"supervisor did not exit within {timeout} s: {err}")
        return self.proc.returncode, err

    def terminate(self, timeout: float = 60) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.finish(timeout)


def _gone(pid: int, timeout: float = 15) -> bool:
    """The process and its whole group (the keeper leads one) have exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(pid) and not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.2)
    return False


def _is_ready(i: dict[str, object]) -> bool:
    return i["state"] == "ready"


@pytest.fixture
def fake(tmp_path: Path) -> Callable[..., Up]:
    started: list[Up] = []

    def start(mode: str = "ok", *extra: str) -> Up:
        up = Up(["--gpus", "cpu", "--model", str(tmp_path), "--served-model-name", "tiny",
                 "--vllm-python", _fake_python(tmp_path), *FAST, *extra],
                tmp_path / f"state{len(started)}", env={"FAKE_VLLM_MODE": mode})
        started.append(up)
        return up

    yield start
    for up in started:
        if up.proc.poll() is None:
            up.proc.kill()
            up.proc.communicate()


# -- fault cases with the fake vLLM ------------------------------------------------------------
def test_crash_loop_is_reported_with_the_log_tail(fake: Callable[..., Up]) -> None:
    up = fake("crash", "--crashloop-after", "3")
    code, err = up.finish(timeout=60)
    assert code == 3, err
    assert "never became ready" in err
    assert "an unsupported model config (head_dim)" in err
    assert "Unsupported CPU attention configuration" in err  # the vLLM log line itself


def test_bad_flag_gives_up_after_the_first_start(fake: Callable[..., Up]) -> None:
    up = fake("badflag", "--crashloop-after", "5", "--backoff-initial", "30", "--backoff-max", "60")
    code, err = up.finish(timeout=30)  # no backoff of 30 s: it stops at once
    assert code == 3, err
    assert "likely cause: a bad vLLM flag" in err
    assert "unrecognized arguments: --bogus" in err


def test_crash_loop_state_on_the_status_endpoint(fake: Callable[..., Up]) -> None:
    up = fake("crash", "--crashloop-after", "2", "--backoff-max", "30")
    inst = up.wait_for("crashloop", lambda i: i["state"] == "crashloop", timeout=60)
    assert inst["consecutive_failures"] == 2
    assert "exited during startup" in str(inst["last_error"])
    assert any("head_dim=16" in line for line in inst["last_log_lines"])  # type: ignore[attr-defined]
    up.terminate()


def test_never_ready_times_out_and_restarts(fake: Callable[..., Up]) -> None:
    up = fake("never_ready", "--startup-timeout", "2", "--crashloop-after", "2")
    code, err = up.finish(timeout=60)
    assert code == 3
    assert "not ready within 2 s" in err


def test_slow_start_is_starting_then_ready(fake: Callable[..., Up]) -> None:
    up = fake("slow:3")
    first = up.wait_for("starting", lambda i: i["state"] == "starting", timeout=15)
    assert first["uptime_s"] is None
    inst = up.wait_for("ready", _is_ready, timeout=60)
    assert inst["restarts"] == 0
    # Load comes from the fake's /metrics, under an older KV-cache metric name.
    inst = up.wait_for("load", lambda i: i["requests_waiting"] == 1.0, timeout=10)
    assert inst["kv_cache_usage"] == 0.25 and inst["requests_running"] == 0.0
    metrics = httpx.get(f"http://127.0.0.1:{up.status_port}/metrics", timeout=5).text
    assert 'reviewbot_supervisor_instance_ready{instance="cpu0"} 1.0' in metrics
    cli = [sys.executable, "-c", "from reviewbot.cli import main; main()", "server", "status"]
    shown = subprocess.run([*cli, "--state-dir", str(up.state_dir)], capture_output=True,
                           text=True, check=False)  # finds the URL in supervisor.json
    assert shown.returncode == 0, shown.stderr
    assert "cpu0" in shown.stdout and "ready" in shown.stdout and "25.00%" in shown.stdout
    pid = int(inst["pid"])  # type: ignore[call-overload]
    code, _ = up.terminate()
    assert code == 0
    assert _gone(pid)
    down = subprocess.run([*cli, "--url", f"http://127.0.0.1:{up.status_port}"],
                          capture_output=True, text=True, check=False)
    assert down.returncode == 3 and "no supervisor answers" in down.stderr


def test_kill_and_hang_of_the_fake_are_restarted(fake: Callable[..., Up]) -> None:
    up = fake()
    inst = up.wait_for("ready", _is_ready, timeout=60)
    os.kill(int(inst["vllm_pid"]), signal.SIGKILL)  # type: ignore[call-overload]
    inst = up.wait_for("restart after kill -9", lambda i: _is_ready(i) and i["restarts"] == 1,
                       timeout=60)
    os.kill(int(inst["vllm_pid"]), signal.SIGSTOP)  # type: ignore[call-overload]
    inst = up.wait_for("restart after SIGSTOP", lambda i: _is_ready(i) and i["restarts"] == 2,
                       timeout=60)
    metrics = httpx.get(f"http://127.0.0.1:{up.status_port}/metrics", timeout=5).text
    assert 'reviewbot_supervisor_restarts_total{instance="cpu0",reason="exited"} 1.0' in metrics
    assert 'reviewbot_supervisor_restarts_total{instance="cpu0",reason="hung"} 1.0' in metrics
    up.terminate()


def test_sigkill_of_the_supervisor_leaves_no_process(fake: Callable[..., Up]) -> None:
    up = fake()
    inst = up.wait_for("ready", _is_ready, timeout=60)
    up.proc.kill()
    up.proc.communicate()
    assert _gone(int(inst["pid"]), timeout=15)  # type: ignore[call-overload]


def test_bad_manifest_refuses_to_start(fake: Callable[..., Up], tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"truncated")
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  model.safetensors\n")
    up = fake()
    code, err = up.finish(timeout=60)
    assert code == 3
    assert "model.safetensors" in err
    assert not (up.state_dir / "logs" / "cpu0.log").exists()  # vLLM never started


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        up = Up(["--gpus", "cpu", "--model", str(tmp_path), "--vllm-python",
                 _fake_python(tmp_path), *FAST], tmp_path / "state", port=port)
        code, err = up.finish(timeout=60)
    assert code == 2, err
    assert f"port {port} on 127.0.0.1 is in use" in err


def test_several_gpu_instances_behind_nginx(tmp_path: Path) -> None:
    """2xA10: the plan gives one replica per GPU; nginx serves both on one port."""
    from reviewbot_server.tinymodel import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")

    def start() -> Up:
        return Up(["--gpus", "2xA10", "--model", str(model), "--served-model-name", "tiny",
                   "--vllm-python", _fake_python(tmp_path), *FAST], tmp_path / "state",
                  env=_fake_nvidia_smi(tmp_path, 2))

    up, retries = start(), 2
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts two instances and nginx slowly
        while time.monotonic() < deadline:
            if up.proc.poll() is not None:  # say why, instead of "no status" after the deadline
                err = up.proc.stderr.read() if up.proc.stderr else ""
                if "is in use" in err and retries:  # a port picked free was taken meanwhile
                    up, retries = start(), retries - 1
                    continue
                pytest.fail(f"supervisor exited ({up.proc.returncode}): {err}")
            status = up.status()
            if status and all(i["state"] == "ready" for i in status["instances"]):  # type: ignore[attr-defined]
                break
            time.sleep(0.3)
        assert status is not None and len(status["instances"]) == 2, status  # type: ignore[arg-type]
        resp = httpx.get(f"http://127.0.0.1:{up.port}/v1/models", timeout=10)
        assert resp.status_code == 200 and resp.json()["data"][0]["id"] == "tiny"
        assert "CUDA_VISIBLE_DEVICES" not in (tmp_path / "state" / "nginx.conf").read_text()
    finally:
        code, err = up.terminate()
    assert code == 0, err


# -- the real vLLM CPU build --------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_up(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path,
            vllm_interpreter: str) -> Iterator[Up]:
    state = tmp_path_factory.mktemp("supervisor")
    # Served like the shared fixture (SERVE_ENV/SERVE_ARGS), so the bot's calls finish.
    up = Up(["--gpus", "cpu", "--model", str(tiny_model_dir), "--served-model-name", "tiny",
             "--vllm-python", vllm_interpreter, "--canary-interval", "2", "--canary-timeout",
             "10", "--canary-failures", "2", "--backoff-initial", "1", "--stop-grace", "10",
             "--warm-up-tokens", "64,512", "--", *SERVE_ARGS], state, env=dict(SERVE_ENV))
    yield up
    if up.proc.poll() is None:
        up.terminate()


@pytest.mark.vllm
def test_real_vllm_ready_then_restarted_after_kill_and_hang(real_up: Up) -> None:
    inst = real_up.wait_for("ready", _is_ready, timeout=600)
    warmed = inst["warm_up_s"]  # the real server took a forced call of each size first
    assert isinstance(warmed, dict) and sorted(warmed) == ["512", "64", "burst"], warmed
    assert all(isinstance(v, float) for v in warmed.values()), warmed
    models = httpx.get(f"http://127.0.0.1:{real_up.port}/v1/models", timeout=10).json()
    assert models["data"][0]["id"] == "tiny"
    load = parse_load(httpx.get(f"http://127.0.0.1:{real_up.port}/metrics", timeout=10).text)
    assert load.kv_cache_usage is not None and load.requests_running is not None

    killed = int(inst["vllm_pid"])  # type: ignore[call-overload]
    os.kill(killed, signal.SIGKILL)
    inst = real_up.wait_for("ready after kill -9",
                            lambda i: _is_ready(i) and i["restarts"] == 1, timeout=600)
    assert inst["vllm_pid"] != killed
    assert sorted(inst["warm_up_s"]) == ["512", "64", "burst"]  # type: ignore[call-overload]

    hung = int(inst["vllm_pid"])  # type: ignore[call-overload]
    os.kill(hung, signal.SIGSTOP)  # a hang: nothing answers, the process is still there
    inst = real_up.wait_for("ready after SIGSTOP",
                            lambda i: _is_ready(i) and i["restarts"] == 2, timeout=600)
    assert "hung" in real_up.state_dir.joinpath("logs", "supervisor.log").read_text()
    assert not Path(f"/proc/{hung}").exists()


@pytest.mark.vllm
def test_real_vllm_serves_a_review_after_the_restarts(real_up: Up, tmp_path: Path) -> None:
    real_up.wait_for("ready", _is_ready, timeout=600)
    out = tmp_path / "review.json"
    review = subprocess.run(
        [sys.executable, "-c", "from reviewbot.cli import main; main()", "review",
         "--diff", str(SAMPLE_DIFF), "--base-url", f"http://127.0.0.1:{real_up.port}/v1",
         "--model", "tiny", "--output", "json", "--output-file", str(out), "--no-progress",
         "--fail-on", "never", *TINY_FORMAT],
        capture_output=True, text=True, check=False, timeout=600)
    assert review.returncode == 0, review.stderr
    assert json.loads(out.read_text())  # a complete review, whatever the random model said


@pytest.mark.vllm
def test_real_vllm_sigterm_leaves_no_process(real_up: Up) -> None:
    inst = real_up.wait_for("ready", _is_ready, timeout=600)
    keeper = int(inst["pid"])  # type: ignore[call-overload]
    code, err = real_up.terminate(timeout=120)
    assert code == 0, err
    # a SIGKILLed engine with gigabytes mapped takes seconds to be torn down on a loaded
    # 2-core machine (one CI run still saw a member 5 s after the supervisor exited); a
    # member that lives on fails
    assert _gone(keeper, timeout=30), f"left behind: {group_members(keeper)}"
    leftovers = subprocess.run(["pgrep", "-f", f"--port {real_up.port}"], check=False,
                               capture_output=True, text=True).stdout.split()
    assert leftovers == []


@pytest.mark.parametrize("case", ["no gpu", "too few gpus", "no vllm", "not a python",
                                  "no tokenizer"])
def test_permanent_causes_exit_2_before_any_launch(tmp_path: Path, case: str) -> None:
    """What no restart can fix is refused at once, in one line, before vLLM is started."""
    from reviewbot_server.tinymodel import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    python, gpus, env = _fake_python(tmp_path), "2xA10", _fake_nvidia_smi(tmp_path, 2)
    if case == "no gpu":
        env = _fake_nvidia_smi(tmp_path, 0)
    elif case == "too few gpus":
        env = _fake_nvidia_smi(tmp_path, 1)
    elif case == "no vllm":
        python = sys.executable  # the test venv has no vllm
    elif case == "not a python":
        python = "/bin/false"
    else:
        for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model"):
            (model / name).unlink(missing_ok=True)
    started = time.monotonic()
    up = Up(["--gpus", gpus, "--model", str(model), "--vllm-python", python, *FAST],
            tmp_path / "state", env={**env, "FAKE_VLLM_MODE": "ok"})
    code, err = up.finish(timeout=60)
    assert code == 2, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err, err
    assert time.monotonic() - started < 30
    assert not (tmp_path / "state" / "supervisor.json").exists() or "starting" not in \
        (tmp_path / "state" / "supervisor.json").read_text()


def test_progress_only_when_token_counters_grow() -> None:
    before = EngineLoad(tokens_total=100.0)
    assert _made_progress(before, EngineLoad(tokens_total=101.0))
    assert not _made_progress(before, EngineLoad(tokens_total=100.0))
    assert not _made_progress(before, None)  # /metrics did not answer: hung
    assert not _made_progress(None, EngineLoad(tokens_total=5.0))


@pytest.mark.parametrize(("failures", "base"), [(1, 2.0), (2, 4.0), (3, 8.0), (10, 120.0)])
def test_backoff_is_exponential_capped_and_jittered(failures: int, base: float) -> None:
    settings = SupervisorSettings(state_dir=Path("."))
    delays = {backoff_delay(failures, settings, random.Random(seed)) for seed in range(20)}
    assert all(base * 0.75 <= d <= base * 1.25 for d in delays)
    assert len(delays) > 1  # jitter: instances do not restart in step


def test_a_state_is_logged_when_it_changes_not_after_every_probe(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`server up` logged `ready` after every health probe (238 lines in 48 min)."""
    import logging
    import threading

    from reviewbot_server.process.launcher import LaunchSpec
    from reviewbot_server.supervise.supervisor import Instance

    seen: list[str] = []

    class Events:
        def state(self, name: str, state: str) -> None:
            seen.append(state)

        def __getattr__(self, name: str) -> object:
            return lambda *args: None

    instance = Instance("i0", LaunchSpec(tmp_path, 8001), SupervisorSettings(tmp_path), Events(),  # type: ignore[arg-type]
                        threading.Event())
    with caplog.at_level(logging.INFO, logger="reviewbot.supervisor"):
        instance._set(state="starting")
        for _ in range(5):
            instance._set(state="ready", canary_latency_s=0.1)
        instance._set(state="unhealthy", last_error="timeout")
        instance._set(state="ready", last_error="")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["i0: starting", "i0: ready", "i0: unhealthy (timeout)", "i0: ready"]
    assert seen == ["starting", "ready", "unhealthy", "ready"]
