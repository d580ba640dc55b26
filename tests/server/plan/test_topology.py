"""The vLLM command lines the planner emits: every flag checked against the installed vLLM's own
parser and the GPU host's pinned one (in a subprocess; vLLM is never imported here), the YaRN
override, API servers from each instance's share of the cores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import PlanRefused, plan
from reviewbot_server.render.serve import plan_text
from reviewbot_server.tinymodel import build_tiny_model
from tests.server.vllm_flags import check_argvs

GPU_VLLM = next(line.split("==")[1] for line in
                (Path(__file__).parents[3] / "server" / "constraints-gpu.txt").read_text().splitlines()
                if line.startswith("vllm=="))


@pytest.mark.parametrize(("gpus", "cpus", "servers"), [
    ("1xH200", 16, 4), ("1xH200", 8, 2), ("1xH200", 4, 1), ("1xH200", None, 1),
    ("4xT4", 8, 1), ("4xT4", 64, 4), ("8xH200", 128, 4)])
def test_api_servers_from_each_instances_share_of_the_cores(
        gpus: str, cpus: int | None, servers: int) -> None:
    """One API server process tokenized every request and count of an H200: a review's
    requests queued behind it (bot ÷ replay 1.10-1.17; with four, 1.04-1.05)."""
    model = load_model("Qwen3-Coder-30B-A3B" if "H200" in gpus else "Qwen2.5-Coder-7B")
    p = plan(gpus, model, cpus=cpus)
    assert p.api_servers == servers
    for inst in p.instances:
        argv = inst.argv
        assert (argv[argv.index("--api-server-count") + 1] == str(servers)
                if servers > 1 else "--api-server-count" not in argv)
    assert ("--api-server-count" in plan_text(p)) == (servers > 1)


def _all_argvs() -> list[list[str]]:
    argvs = []
    for model in ("Qwen2.5-Coder-7B", "Qwen2.5-Coder-14B", "Qwen2.5-Coder-32B",
                  "Qwen3-Coder-30B-A3B"):
        for spec in ("4xT4", "2xA10", "1xRTX4090", "1xH100", "1xH200", "8xH200"):
            for quant in (None, "fp8", "awq", "gptq", "gptq-int8"):
                try:
                    p = plan(spec, load_model(model), quantization=quant, cpus=64)
                except PlanRefused as refused:
                    p = refused.nearest  # type: ignore[assignment]
                if p is not None:
                    argvs.append(list(p.instances[0].argv))
    return argvs


def test_every_flag_exists_in_installed_vllm(vllm_interpreter: str) -> None:
    VLLM_PYTHON = vllm_interpreter
    argvs = _all_argvs()
    flags = {a for argv in argvs for a in argv if a.startswith("--")}
    assert {"--hf-overrides", "--enable-expert-parallel", "--disable-custom-all-reduce",
            "--quantization", "--attention-backend", "--kv-cache-dtype",
            "--api-server-count"} <= flags
    result = check_argvs(VLLM_PYTHON, argvs)
    assert result["errors"] == []
    assert {"hermes", "qwen3_coder", "qwen3_xml"} <= set(result["tool_parsers"])
    assert "qwen3" in result["reasoning_parsers"]


def test_every_flag_exists_in_the_gpu_hosts_vllm(vllm_interpreter: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU host's pinned vLLM (server/constraints-gpu.txt), whose Python sources
    scripts/setup.sh unpacks: its own parser, run by the CPU build's interpreter, accepts every
    planned argv and rejects a flag it does not have."""
    source = Path(__file__).parents[3] / ".vllm-src" / GPU_VLLM
    assert (source / ".ready").is_file(), f"{source} is missing: run scripts/setup.sh"
    monkeypatch.setenv("PYTHONPATH", str(source))
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cpu")  # a GPU build: its platform, named
    result = check_argvs(vllm_interpreter, [*_all_argvs(), ["vllm", "serve", "m", "--nope"]])
    assert result["version"] == GPU_VLLM
    assert result["errors"] == ["rejected by vLLM's parser: m --nope"]
    assert {"hermes", "qwen3_coder", "qwen3_xml"} <= set(result["tool_parsers"])


def test_flag_probe_rejects_unknown_flags_and_parsers(vllm_interpreter: str) -> None:
    VLLM_PYTHON = vllm_interpreter
    result = check_argvs(VLLM_PYTHON, [
        ["vllm", "serve", "m", "--rope-scaling", "{}"],  # removed from vLLM
        ["vllm", "serve", "m", "--enable-auto-tool-choice", "--tool-call-parser", "nope"],
    ])
    assert len(result["errors"]) == 2, result["errors"]


def test_yarn_override_is_what_makes_vllm_accept_the_context(tmp_path: Path,
                                                            vllm_interpreter: str) -> None:
    """Real model config through vLLM's own ModelConfig: native 16K, planned 32K."""
    VLLM_PYTHON = vllm_interpreter
    model_dir = build_tiny_model(tmp_path / "tiny")
    config = json.loads((model_dir / "config.json").read_text())
    config["max_position_embeddings"] = 16384
    (model_dir / "config.json").write_text(json.dumps(config))
    p = plan("1xT4", load_model(str(model_dir)), max_model_len=32768)
    argv = list(p.instances[0].argv)
    assert p.hf_overrides is not None and "--hf-overrides" in argv
    at = argv.index("--hf-overrides")
    without = argv[:at] + argv[at + 2:]
    result = check_argvs(VLLM_PYTHON, [argv, without])
    assert len(result["errors"]) == 1, result["errors"]
    assert "max_model_len" in result["errors"][0]
