"""`server up`'s checks before it launches anything, against real executables standing in for
vLLM's interpreter and nvidia-smi: each permanent cause is one usage error naming it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from reviewbot_server.errors import UsageError
from reviewbot_server.supervise.preflight import (
    check_gpus,
    check_model_dir,
    check_vllm_python,
    visible_gpus,
)


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(("body", "says"), [
    ("exit 3", "has no vllm installed"),  # the probe's own answer for "no vllm"
    ("exit 1", "does not run (exit 1)"),
])
def test_an_interpreter_without_vllm_is_named(tmp_path: Path, body: str, says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(says)):
        check_vllm_python(_script(tmp_path, "python", body))


def test_a_missing_interpreter_and_one_without_vllm_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not run: FileNotFoundError"):
        check_vllm_python(str(tmp_path / "nowhere" / "python"))
    with pytest.raises(UsageError, match="has no vllm installed"):
        check_vllm_python(sys.executable)  # the review side's venv: no vLLM, by design
    check_vllm_python(_script(tmp_path, "ok", "exit 0"))


def test_a_model_directory_needs_a_readable_config_and_a_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has no config.json"):
        check_model_dir(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(UsageError, match="cannot read .*config.json: JSONDecodeError"):
        check_model_dir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    with pytest.raises(UsageError, match="no readable tokenizer"):
        check_model_dir(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    check_model_dir(tmp_path)


def test_visible_gpus_are_nvidia_smis_narrowed_by_cuda_visible_devices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = _script(tmp_path, "nvidia-smi", "printf '0\\n1\\n2\\n3\\n'")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpus(smi) == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    assert visible_gpus(smi) == 2
    with pytest.raises(UsageError, match="needs 4 GPU\\(s\\) but 2 are visible"):
        check_gpus(4, smi)
    check_gpus(2, smi)


def test_no_gpu_is_a_usage_error_pointing_at_the_cpu_build(tmp_path: Path) -> None:
    failing = _script(tmp_path, "nvidia-smi", "echo 'NVIDIA-SMI has failed' >&2; exit 9")
    assert visible_gpus(failing) == 0
    with pytest.raises(UsageError, match="--gpus cpu"):
        check_gpus(1, failing)
