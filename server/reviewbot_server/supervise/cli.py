"""`reviewbot server up` and `reviewbot server status`."""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import signal
import sys
from pathlib import Path
from types import FrameType

import click
import httpx

from reviewbot_server.errors import BackendUnreachable, LaunchError, UsageError
from reviewbot_server.process.launcher import (
    LaunchSpec,
    check_port_free,
    cpu_dtype,
    find_vllm_python,
)
from reviewbot_server.render.configs import printable
from reviewbot_server.supervise import preflight
from reviewbot_server.supervise.canary import WARM_UP_BURST, WARM_UP_TOKENS
from reviewbot_server.supervise.specs import Nginx, gpu_specs, nginx_for
from reviewbot_server.supervise.status_app import Metrics, StatusServer, build_app
from reviewbot_server.supervise.supervisor import InstanceState, Supervisor, SupervisorSettings

DEFAULT_STATUS_PORT = 8089
STATE_FILE = "supervisor.json"  # while it runs: its pid and status URL
FINAL_FILE = "gave-up.json"  # when it gave up on a crash loop: the instances' last state
log = logging.getLogger("reviewbot.supervisor")


def _setup_logging(state_dir: Path) -> None:
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        state_dir / "logs" / "supervisor.log", maxBytes=5 * 2**20, backupCount=3)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    console = logging.StreamHandler(sys.stderr)
    console.setFormatter(logging.Formatter("reviewbot server: %(message)s"))
    log.handlers[:] = [handler, console]
    log.setLevel(logging.INFO)
    log.propagate = False


def _verify_model(model_dir: Path) -> None:
    """Refuse a model dir whose SHA256SUMS does not match (server/reviewbot_server/probe/integrity.py)."""
    from reviewbot_server.probe.integrity import MANIFEST, verify_manifest

    if (model_dir / MANIFEST).is_file():
        verify_manifest(model_dir)
        log.info("%s: every file matches %s", model_dir, MANIFEST)


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--gpus", required=True, help="`cpu` (the CPU build, one instance) or a GPU "
              "spec such as 2xA10; see `reviewbot server plan`.")
@click.option("--model", "model_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Local model directory (config.json, tokenizer, weights).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="Client port: vLLM's own with one instance, nginx's with several.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path(".reviewbot-server"), show_default=True,
              help="Logs, generated configs and supervisor.json live here.")
@click.option("--served-model-name", default=None, help="Default: the model dir's name.")
@click.option("--max-model-len", type=int, default=65536, show_default=True)
@click.option("--status-port", type=int, default=DEFAULT_STATUS_PORT, show_default=True,
              help="Loopback port of the status endpoint (0: any free port).")
@click.option("--vllm-python", default=None,
              help="Interpreter with vLLM; default $REVIEWBOT_VLLM_PYTHON, else this one.")
@click.option("--startup-timeout", type=float, default=900.0, show_default=True)
@click.option("--canary-interval", type=float, default=10.0, show_default=True)
@click.option("--canary-timeout", type=float, default=15.0, show_default=True)
@click.option("--canary-failures", type=int, default=2, show_default=True,
              help="Failed canaries in a row that count as a hang.")
@click.option("--backoff-initial", type=float, default=2.0, show_default=True)
@click.option("--backoff-max", type=float, default=120.0, show_default=True)
@click.option("--crashloop-after", type=int, default=4, show_default=True,
              help="Short lives in a row before the state is crashloop.")
@click.option("--drain-timeout", type=float, default=30.0, show_default=True)
@click.option("--stop-grace", type=float, default=20.0, show_default=True,
              help="Seconds between SIGTERM and SIGKILL.")
@click.option("--warm-up-tokens", default=",".join(map(str, WARM_UP_TOKENS)), show_default=True,
              help="Prompt sizes of the forced tool calls sent before an instance is ready "
                   "(after every start), so that no review pays the kernels' compile; '' for none.")
@click.option("--warm-up-burst", type=click.IntRange(min=0), default=WARM_UP_BURST,
              show_default=True, help="Warm-up calls sent at once after those, as a review "
                                      "sends them; 0 for none.")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def up(gpus: str, model_dir: Path, port: int, state_dir: Path, served_model_name: str | None,
       max_model_len: int, status_port: int, vllm_python: str | None, startup_timeout: float,
       canary_interval: float, canary_timeout: float, canary_failures: int,
       backoff_initial: float, backoff_max: float, crashloop_after: int,
       drain_timeout: float, stop_grace: float, warm_up_tokens: str, warm_up_burst: int,
       extra: tuple[str, ...]) -> None:
    """Launch vLLM and keep it serving until SIGTERM/SIGINT. Extra vLLM flags go after `--`."""
    state_dir = state_dir.resolve()
    _setup_logging(state_dir)
    model_dir = model_dir.resolve()
    preflight.check_model_dir(model_dir)
    _verify_model(model_dir)
    python = vllm_python or find_vllm_python()
    preflight.check_vllm_python(python)
    name = served_model_name or model_dir.name
    if gpus == "cpu":
        specs = {"cpu0": LaunchSpec(model_dir=model_dir, port=port, served_model_name=name,
                                    max_model_len=max_model_len, dtype=cpu_dtype(),
                                    extra_args=extra)}
        lb = None
    else:
        specs = gpu_specs(gpus, model_dir, name, max_model_len, port, extra)
        pinned = {g for s in specs.values() for g in s.env.get("CUDA_VISIBLE_DEVICES", "").split(",")}
        preflight.check_gpus(len(pinned - {""}) or 1)
        lb = nginx_for(specs, port, state_dir) if len(specs) > 1 else None
    for spec in specs.values():  # vLLM binds only after loading: say it now, not in minutes
        check_port_free(spec.host, spec.port)
    if lb is not None:
        check_port_free("127.0.0.1", port)
    settings = SupervisorSettings(
        state_dir=state_dir, startup_timeout_s=startup_timeout,
        canary_interval_s=canary_interval, canary_timeout_s=canary_timeout,
        canary_failures=canary_failures, backoff_initial_s=backoff_initial,
        backoff_max_s=backoff_max, crashloop_after=crashloop_after,
        drain_timeout_s=drain_timeout, stop_grace_s=stop_grace, vllm_python=python,
        warm_up_tokens=_sizes(warm_up_tokens), warm_up_burst=warm_up_burst,
    )
    sys.exit(_run(specs, settings, status_port, lb))


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise click.BadParameter("a comma-separated list of token counts",
                                 param_hint="--warm-up-tokens") from None
    if any(size < 0 for size in sizes):
        raise click.BadParameter("token counts are not negative", param_hint="--warm-up-tokens")
    return sizes


def _run(specs: dict[str, LaunchSpec], settings: SupervisorSettings, status_port: int,
         lb: Nginx | None) -> int:
    metrics = Metrics()
    supervisor = Supervisor(specs, settings, metrics)
    http = StatusServer(build_app(supervisor.status, metrics), status_port)
    http.start()
    if status_port == 0:
        http.port = http.server.servers[0].sockets[0].getsockname()[1]
    state_file = settings.state_dir / STATE_FILE
    state_file.write_text(json.dumps({"pid": os.getpid(), "status_url": http.url,
                                      "instances": {n: s.root_url for n, s in specs.items()}}))

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s: draining and stopping", signal.Signals(signum).name)
        supervisor.shutdown.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("status on %s/status; logs in %s", http.url, settings.state_dir / "logs")
    code = 0
    try:
        if lb is not None:
            lb.start()
        supervisor.start()
        while not supervisor.shutdown.wait(1.0):
            if supervisor.given_up():
                code = _report_crashloop(supervisor, settings.state_dir / FINAL_FILE)
                break
    except (LaunchError, UsageError) as exc:
        log.error("%s", exc)
        code = exc.exit_code
    finally:
        stopped = supervisor.stop()
        if lb is not None:
            lb.stop()
        http.stop()
        state_file.unlink(missing_ok=True)
        log.info("stopped%s", "" if stopped else " (some instances did not stop in time)")
    return code


def _report_crashloop(supervisor: Supervisor, final_file: Path) -> int:
    """Why it gave up, in the log and in `final_file`: the status endpoint goes away with the
    process, the instances' last state stays readable."""
    snaps = [inst.snapshot() for inst in supervisor.instances]
    final_file.write_text(json.dumps({"instances": snaps}))
    for snap in snaps:
        log.error("%s never became ready: %s", snap["name"], snap["last_error"])
        for line in snap["last_log_lines"]:  # type: ignore[attr-defined]
            click.echo(f"    {line}", err=True)
    return LaunchError.exit_code


def _status_url(url: str | None, state_dir: Path) -> str:
    if url:
        return url.rstrip("/")
    state_file = state_dir / STATE_FILE
    if state_file.is_file():
        return str(json.loads(state_file.read_text())["status_url"])
    return f"http://127.0.0.1:{DEFAULT_STATUS_PORT}"


ERROR_CHARS = 300  # of an instance's last error on its status row


def _shown(value: object) -> str:
    """A status answer's text on a terminal: the supervisor's error quotes vLLM's output, which
    may hold terminal escapes or many lines; one visible line, bounded."""
    return printable(str(value)[:ERROR_CHARS])


def _fmt(value: object, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}{unit}"
    return f"{value}{unit}"


@click.command()
@click.option("--url", default=None, help="The supervisor's status endpoint; default: the "
              "one in STATE_DIR/supervisor.json, else http://127.0.0.1:8089.")
@click.option("--state-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path(".reviewbot-server"), show_default=True)
@click.option("--output", type=click.Choice(["text", "json"]), default="text")
def status(url: str | None, state_dir: Path, output: str) -> None:
    """Show each instance: state, pid, restarts, uptime, KV cache, requests. Exit 1 unless all
    are ready."""
    base = _status_url(url, state_dir)
    try:
        resp = httpx.get(f"{base}/status", timeout=10.0)
        resp.raise_for_status()
    except httpx.HTTPError as exc:
        raise BackendUnreachable(f"no supervisor answers at {base}: {exc}") from exc
    data = resp.json()
    instances = data["instances"]
    if output == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(f"{'instance':10} {'state':11} {'pid':>7} {'restarts':>8} {'uptime':>9} "
                   f"{'kv':>6} {'run':>4} {'wait':>4}  url / last error")
        for i in instances:
            kv = i["kv_cache_usage"]
            click.echo(
                f"{i['name']:10} {i['state']:11} {_fmt(i['vllm_pid'] or i['pid']):>7} "
                f"{i['restarts']:>8} {_fmt(i['uptime_s'], 's'):>9} "
                f"{_fmt(None if kv is None else kv * 100, '%'):>6} "
                f"{_fmt(i['requests_running']):>4} {_fmt(i['requests_waiting']):>4}  "
                f"{_shown(i['url'])}"
                + (f"  ({_shown(i['last_error'])})" if i["last_error"] else ""))
    ready = all(i["state"] == InstanceState.READY for i in instances)  # JSON: the value
    sys.exit(0 if ready and instances else 1)

