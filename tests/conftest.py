"""Shared fixtures. The real vLLM CPU server: started once per session, on demand.

`vllm_server` builds the tiny random-weight model (server/reviewbot_server/tinymodel.py), starts
`python -m vllm.entrypoints.openai.api_server` with the interpreter from
$REVIEWBOT_VLLM_PYTHON (or this one, if it has vllm) on a free loopback port, and stops it
at the end of the session; with $REVIEWBOT_TEST_VLLM_INFO it uses the server that .ci/run
started (tests/serve_tiny.py) instead. Both serve with `tiny_spec`, which adds the tiny
model's SERVE_ENV/SERVE_ARGS (JSON-schema tool path without whitespace padding). Tests that use it are marked `vllm` automatically; a missing
vLLM fails them with the reason, it never skips them. Startup takes about a minute.

`real_server` does the same with the real demo model (Qwen2.5-Coder-1.5B-Instruct, fetched and
converted into ~/.cache/reviewbot/models once; $REVIEWBOT_TEST_REALMODEL_INFO and
tests/serve_real.py in CI); its tests are marked `realmodel`. Startup takes two to five minutes.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reviewbot_server import realmodel
from reviewbot_server.errors import LaunchError, UsageError
from reviewbot_server.process.launcher import (
    LaunchSpec,
    VllmProcess,
    cpu_dtype,
    find_vllm_python,
    free_port,
)
from reviewbot_server.tinymodel import SERVE_ARGS, SERVE_ENV, build_tiny_model
from tests.cleanup import after_exit

# the head trees that forge reviews download (reviewbot.flow.headtree) go to a temporary cache, in
# this process and in the reviewbot processes the tests start, never the user's ~/.cache
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="reviewbot-test-cache-")
after_exit([Path(os.environ["XDG_CACHE_HOME"])])  # removed when this process ends, however

TINY_MODEL_NAME = "tiny"
TINY_MAX_MODEL_LEN = 65536
# random weights write findings that parse only under the forced call's grammar: a review on the
# tiny model asks for them so (findings_format tool; the project's default is a free JSON answer)
TINY_FORMAT = ("--findings-format", "tool")
VLLM_STARTUP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class VllmServer:
    base_url: str  # ends in /v1, for openai.OpenAI(base_url=…)
    root_url: str  # for /tokenize, /metrics, /health
    model: str  # the served name
    model_dir: Path
    max_model_len: int
    log_path: Path


def vllm_python() -> str:
    """The vLLM interpreter, or a test failure that says how to provide one."""
    try:
        return find_vllm_python()
    except UsageError as exc:
        pytest.fail(f"the real-vLLM tests need vLLM: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def vllm_interpreter() -> str:
    """The vLLM interpreter: a test that takes it is marked `vllm` (pytest_collection_modifyitems)."""
    return vllm_python()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


def _shared_server_env(core: int) -> dict[str, str]:
    """The suite's two shared servers each compute on a core of their own. vLLM's CPU build
    otherwise binds both workers to core 0 (it keeps the last core for the rest), and in a CI
    run one step of the tiny model's, queued behind the real model's, outlasted vLLM's 300 s
    limit: the engine died and the tests of the next minutes met no server. A slow step is
    now only slow."""
    env = {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800"}
    if (os.cpu_count() or 1) >= 2:
        env["VLLM_CPU_OMP_THREADS_BIND"] = str(core)
    return {k: v for k, v in env.items() if k not in os.environ}  # the caller's own wins


def tiny_spec(model_dir: Path) -> LaunchSpec:
    return LaunchSpec(
        model_dir=model_dir,
        port=free_port(),
        served_model_name=TINY_MODEL_NAME,
        max_model_len=TINY_MAX_MODEL_LEN,
        dtype=cpu_dtype(),
        env={**SERVE_ENV, **_shared_server_env(core=1)},
        extra_args=SERVE_ARGS,
    )


def real_spec(model_dir: Path) -> LaunchSpec:
    return LaunchSpec(model_dir=model_dir, port=free_port(), served_model_name=realmodel.NAME,
                      max_model_len=realmodel.CONTEXT, dtype=cpu_dtype(),
                      env=_shared_server_env(core=0), extra_args=realmodel.SERVE_ARGS)


def _served(info_variable: str, start: Callable[[Path], LaunchSpec],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """The server .ci/run started (its details in $info_variable), else one of our own."""
    info = os.environ.get(info_variable)
    if info:
        if not Path(info).is_file():
            pytest.fail(f"{info_variable}={info} does not exist: is its tests/serve_*.py "
                        "running?", pytrace=False)
        data = json.loads(Path(info).read_text())
        yield VllmServer(**{k: Path(v) if k.endswith(("_dir", "_path")) else v
                            for k, v in data.items()})
        return
    spec = start(tmp_path_factory.mktemp("models"))
    log_path = tmp_path_factory.mktemp("vllm") / "vllm.log"
    process = VllmProcess(
        spec, log_path=log_path, python=vllm_python(), startup_timeout=VLLM_STARTUP_TIMEOUT_S
    )
    try:
        process.__enter__()
    except LaunchError as exc:
        pytest.fail(f"{exc}\n" + "\n".join(exc.log_tail), pytrace=False)
    try:
        yield VllmServer(base_url=f"{spec.root_url}/v1", root_url=spec.root_url,
                         model=spec.served_model_name, model_dir=spec.model_dir,
                         max_model_len=spec.max_model_len, log_path=log_path)
    finally:
        process.stop()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    yield from _served("REVIEWBOT_TEST_VLLM_INFO",
                       lambda models: tiny_spec(build_tiny_model(models / "tiny")),
                       tmp_path_factory)


REAL_MODEL_GIB = 12  # served in float32 on a CPU without AVX512-BF16: about 11 GB


def memory_short(need_gib: float = REAL_MODEL_GIB) -> str | None:
    """Why the real model cannot be served here now (one line), or None: the kernel's
    MemAvailable, read before a start that would otherwise time out or be killed."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            fields = dict(line.split(":", 1) for line in info)
        available = int(fields["MemAvailable"].split()[0]) / 2**20
    except (OSError, KeyError, ValueError):
        return None  # not Linux: nothing to read, the start says how it went
    if available >= need_gib:
        return None
    return (f"the real model needs about {need_gib} GiB free to be served and "
            f"{available:.1f} GiB is available: free memory, or run `make test-fast` (every "
            "test but the real model's)")


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """The real demo model (fetched and converted into the user's cache on first use)."""
    def start(models: Path) -> LaunchSpec:
        if short := memory_short():
            pytest.fail(short, pytrace=False)
        try:
            folder = realmodel.real_model(realmodel.default_cache(), vllm_python(), print)
        except UsageError as exc:
            pytest.fail(f"the real model could not be had: {exc}", pytrace=False)
        return real_spec(folder)

    yield from _served("REVIEWBOT_TEST_REALMODEL_INFO", start, tmp_path_factory)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses `vllm_server` or `vllm_interpreter` (also through another
    fixture) as `vllm` and every one that uses
    `real_server` as `realmodel` (all on one worker, with `--dist loadgroup`), so `-m "not vllm"`
    and `-m "not realmodel"` are reliable."""
    for item in items:
        if {"vllm_server", "vllm_interpreter"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.vllm)
        if "real_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realmodel)
            # one at a time: two real-model reviews at once on 2 cores ran past the timeout
            item.add_marker(pytest.mark.xdist_group("realmodel"))


from tests.git_support import git_env, git_repo, make_repo, module_repos, tokenizer_json  # noqa: F401
from tests.local_http import local_server  # noqa: F401 - a fixture
from tests.postgres_support import postgres_admin_url, postgres_url, queue_url  # noqa: F401
