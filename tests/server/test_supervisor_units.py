"""Pure parts of the supervisor: vLLM metrics parsing, progress, backoff."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reviewbot_server.process.launcher import likely_cause
from reviewbot_server.supervise.canary import EngineLoad, parse_load
from reviewbot_server.supervise.supervisor import SupervisorSettings, _made_progress, backoff_delay

NEW = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 100.0
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{engine="0",model_name="m"} 20.0
"""
OLD = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 0.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.1
"""


def test_parse_load_current_names_sums_requests_and_takes_the_fullest_cache() -> None:
    assert parse_load(NEW) == EngineLoad(0.75, 3.0, 4.0, 120.0)


def test_parse_load_older_names() -> None:
    assert parse_load(OLD) == EngineLoad(0.1, 0.0, None, None)


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


@pytest.mark.parametrize(("line", "cause"), [
    ("torch.OutOfMemoryError: CUDA out of memory.", "out of memory"),
    ("api_server.py: error: unrecognized arguments: --bogus", "a bad vLLM flag"),
    ("ValueError: Model architectures ['Foo'] are not supported for now.",
     "an unsupported model architecture"),
    ("OSError: [Errno 98] Address already in use", "the port is in use"),
])
def test_likely_cause(line: str, cause: str) -> None:
    assert likely_cause(["INFO starting", line, "INFO shutting down"], 1) == cause


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


def test_warm_up_sends_one_forced_call_per_size_within_the_context() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    seen: list[dict[str, object]] = []

    def script(body: dict[str, object], attempt: int) -> Reply:
        seen.append(body)
        return Reply(tool_args={"ok": True})

    with FakeOpenAI(script, max_model_len=100_000) as server, httpx.Client() as client:
        root = server.base_url.removesuffix("/v1")
        took = warm_up(client, root, "fake", (16384, 0, 2048, 200_000), 20_000, 10)
    assert sorted(took, key=int) == ["2048", "16384", "18000"]  # 0 dropped, 200K capped
    assert all(isinstance(s, float) for s in took.values())
    lengths = [len(b["messages"][0]["content"]) for b in seen]  # type: ignore[index]
    assert lengths == sorted(lengths) and len(seen) == 3
    assert all(b["tool_choice"] == {"type": "function", "function": {"name": "canary"}}
               for b in seen)


def test_the_warm_up_ends_with_a_burst_sent_as_a_review_sends_its_requests() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    seen: list[dict[str, object]] = []

    def script(body: dict[str, object], attempt: int) -> Reply:
        seen.append(body)
        if body.get("response_format"):
            return Reply(content='{"ok": true}')
        return Reply(tool_args={"ok": True})

    with FakeOpenAI(script, max_model_len=100_000) as server, httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (64,), 8192, 10,
                       burst=4)
    assert sorted(took) == ["64", "burst"] and isinstance(took["burst"], float)
    burst = seen[1:]
    assert len(burst) == 4
    guided = [b for b in burst if b.get("response_format")]
    assert len(guided) == 2 and all(b["tool_choice"] == "none" for b in guided)
    assert sorted(b["temperature"] for b in burst) == [0.0, 0.0, 0.1, 0.1]  # type: ignore[type-var]
    # distinct prompts: each is prefilled, none is served from another's cache alone
    assert len({b["messages"][0]["content"] for b in burst}) == 4  # type: ignore[index]


def test_a_failed_warm_up_burst_is_reported_not_raised() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(lambda body, n: Reply(status=500), max_model_len=100_000) as server, \
            httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (), 8192, 5, burst=2)
    assert took == {"burst": None}


def test_a_failed_warm_up_call_is_reported_not_raised() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(lambda body, n: Reply(status=500), max_model_len=100_000) as server, \
            httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (1024,), 8192, 5)
    assert took == {"1024": None}


def test_the_api_key_reaches_vllm_in_its_environment_never_its_command_line(
        tmp_path: Path) -> None:
    """`ps` shows every process's argv to every user of the machine."""
    import json
    import sys
    import time

    from reviewbot_server.process.launcher import LaunchSpec, VllmProcess, free_port

    seen = tmp_path / "seen.json"
    fake = tmp_path / "python"
    # written aside, then renamed: `seen` exists only once whole (stop() may kill the writer)
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"with open({str(seen)!r} + '.part', 'w') as out:\n"
                    f"    json.dump({{'argv': sys.argv, 'key': os.environ.get('VLLM_API_KEY')}}, out)\n"
                    f"os.replace({str(seen)!r} + '.part', {str(seen)!r})\n")
    fake.chmod(0o755)
    (tmp_path / "model").mkdir()
    spec = LaunchSpec(model_dir=tmp_path / "model", port=free_port(), extra_args=(
        "--api-key", "sk-never-in-argv-0123"))
    process = VllmProcess(spec, log_path=tmp_path / "vllm.log", python=str(fake))
    assert "sk-never-in-argv-0123" not in " ".join(process.argv)
    process.start()
    deadline = time.monotonic() + 20
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.stop()
    got = json.loads(seen.read_text())
    assert got["key"] == "sk-never-in-argv-0123"
    assert not any("sk-never-in-argv" in word or word == "--api-key" for word in got["argv"])


def test_the_cpu_build_serves_bfloat16_only_where_the_cpu_computes_it() -> None:
    from reviewbot_server.process.launcher import cpu_dtype

    amd = "flags\t\t: fpu vme avx avx2 fma bmi2 sha_ni\n"
    sapphire = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
    graviton = "Features\t: fp asimd sve bf16 i8mm\n"
    assert [cpu_dtype(c) for c in (amd, sapphire, graviton)] == ["float32", "bfloat16", "bfloat16"]
    assert cpu_dtype() in ("float32", "bfloat16")  # this machine's, read from /proc/cpuinfo
