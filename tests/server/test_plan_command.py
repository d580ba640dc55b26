"""`reviewbot server plan` in this process: every output format from one plan, and a refusal
that exits 1 with the nearest plan that works (JSON on stdout when asked for)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from reviewbot_server.plan_command import OUTPUTS, plan

MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"
FITS = ["--gpus", "1xH100", "--model", MODEL, "--cpus", "16"]


def _plan(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(plan, list(args))
    return result.exit_code, result.stdout, result.stderr


SAYS = {"text": "--max-model-len", "json": '"max_model_len"', "systemd": "ExecStart=",
        "nginx": "upstream", "haproxy": "backend", "helm": "vllm"}


@pytest.mark.parametrize("output", OUTPUTS)
def test_every_output_renders_the_plan(output: str) -> None:
    code, out, err = _plan(*FITS, "--output", output)
    assert code == 0 and SAYS[output] in out and err == ""


def test_the_balancers_take_the_listen_address_and_rate() -> None:
    _, out, _ = _plan(*FITS, "--output", "nginx", "--listen", "127.0.0.1:18123",
                      "--rate-limit", "7")
    assert "listen 127.0.0.1:18123" in out and "rate=7r/s" in out


def test_a_refused_plan_exits_1_with_the_nearest_plan_that_works() -> None:
    too_much = ["--gpus", "1xT4", "--model", MODEL, "--max-model-len", "131072",
                "--quantization", "bf16", "--cpus", "8"]
    code, out, err = _plan(*too_much)
    assert code == 1 and err.startswith("reviewbot: cannot plan: ") and out == ""
    code, out, err = _plan(*too_much, "--output", "json")
    body = json.loads(out)
    assert code == 1 and body["error"] and set(body) == {"error", "alternatives", "nearest"}
