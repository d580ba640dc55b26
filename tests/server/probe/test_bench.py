"""`reviewbot server bench`: briefly against the real vLLM CPU server with tiny sizes, plus
the requested sizes and the refusals (the arithmetic: test_bench_load.py)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from reviewbot.cli import main
from reviewbot_server.errors import UsageError
from reviewbot_server.probe.bench import parse_sizes


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["server", "bench", *args])
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


@pytest.mark.vllm
def test_bench_json_against_real_server(vllm_server: Any,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--base-url", vllm_server.base_url, "--sizes", "1k,2k",
                          "--duration", "4", "--concurrency", "2", "--output-tokens", "16",
                          "--output", "json"], capsys)
    assert code == 0, err
    body = json.loads(out)
    assert [p["name"] for p in body["phases"]] == ["small", "medium"]
    for phase in body["phases"]:
        assert phase["ok"] >= 1 and phase["error_rate"] == 0.0, phase
        assert phase["ttft_p50_s"] is not None and phase["ttft_p95_s"] >= phase["ttft_p50_s"]
        assert phase["reviews_per_hour"] > 0 and phase["output_tokens_per_s"] > 0
        # sizes are calibrated with the server's /tokenize: within 5 % of the target
        assert abs(phase["mean_prompt_tokens"] - phase["target_prompt_tokens"]) <= (
            0.05 * phase["target_prompt_tokens"]), phase
    assert "small" in err  # the progress bar goes to stderr


@pytest.mark.vllm
def test_bench_text_report_with_scale(vllm_server: Any,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--base-url", vllm_server.base_url, "--sizes", "4k,16k",
                        "--scale", "0.0625", "--duration", "2", "--max-requests", "1",
                        "--concurrency", "1", "--output-tokens", "8"], capsys)
    assert code == 0
    header, *rows = out.splitlines()
    assert "TTFT p50" in header and "reviews/h" in header
    assert rows[0].startswith("small") and rows[1].startswith("medium")


@pytest.mark.vllm
def test_bench_refuses_sizes_beyond_context(vllm_server: Any,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    too_big = str(vllm_server.max_model_len)
    code, _, err = run(["--base-url", vllm_server.base_url, "--sizes", too_big], capsys)
    assert code == 2 and "max_model_len" in err


def test_unreachable_server_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, _, err = run(["--base-url", f"http://127.0.0.1:{port}", "--duration", "1"], capsys)
    assert code == 3 and "ConnectError" in err


def test_parse_sizes() -> None:
    assert parse_sizes("4k,16k,60k", 1.0) == [4096, 16384, 61440]
    assert parse_sizes("4k, 16k", 0.25) == [1024, 4096]
    for bad in ("", "4x", "1,2,3,4,5,6"):
        with pytest.raises(UsageError):
            parse_sizes(bad, 1.0)
    with pytest.raises(UsageError, match="under 64"):
        parse_sizes("1k", 0.01)


