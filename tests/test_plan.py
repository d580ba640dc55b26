"""Planner: memory math against figures computed by hand from the published config.json
values, topology choices, refusals with the nearest plan, and every emitted flag checked
against the installed vLLM's own parser (in a subprocess; vLLM is never imported here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot.cli import main
from reviewbot.errors import UsageError
from reviewbot.server.plan.model import load_model
from reviewbot.server.plan.planner import PlanRefused, plan
from reviewbot.server.render.vllm_flags import check_argvs
from reviewbot.server.tinymodel import build_tiny_model
from tests.conftest import vllm_python  # the venv REVIEWBOT_VLLM_PYTHON names, or a failure

MIB, GIB = 2**20, 2**30

# Hand-computed parameter counts: embeddings (vocab × hidden × 2, untied) + layers × (q,o +
# k,v projections + 3 MLP matrices, or 128 experts × 3 matrices + router for the MoE).
P7B = 152064 * 3584 * 2 + 28 * (3584 * 3584 * 2 + 3584 * 512 * 2 + 3 * 3584 * 18944)
P32B = 152064 * 5120 * 2 + 64 * (5120 * 5120 * 2 + 5120 * 1024 * 2 + 3 * 5120 * 27648)
MOE_LINEAR = 48 * (2048 * 4096 * 2 + 2048 * 512 * 2 + 128 * 3 * 2048 * 768 + 2048 * 128)
MOE_EMBED = 151936 * 2048 * 2


def reserve(tokens: int, mlp_per_gpu: int, hidden: int, vocab: int) -> int:
    # 1 GiB runtime + one prefill chunk's activations (2 B) + fp32 logits for 256 sequences
    return GIB + tokens * (2 * mlp_per_gpu + 4 * hidden) * 2 + 256 * vocab * 4


def test_param_counts_match_published_sizes() -> None:
    assert P7B == 7_615_283_200  # Qwen publishes 7.61 B
    assert load_model("Qwen2.5-Coder-7B").param_count == P7B
    assert load_model("Qwen2.5-Coder-32B").param_count == P32B  # 32.76 B
    assert load_model("Qwen3-Coder-30B-A3B").param_count == MOE_LINEAR + MOE_EMBED  # 30.5 B


def test_7b_bf16_on_4xT4_is_two_tp2_replicas_in_fp16() -> None:
    p = plan("4xT4", load_model("Qwen2.5-Coder-7B"))
    budget = int(15095 * MIB * 0.90)
    weights = P7B * 2 // 2  # bf16, split over TP=2
    kv_per_token = 2 * 28 * (4 // 2) * 128 * 2  # 28 KiB per GPU
    kv = budget - weights - reserve(2048, 18944 // 2, 3584, 152064)
    tokens = kv // kv_per_token // 16 * 16
    assert (p.tp, p.replicas_per_node) == (2, 2)
    assert p.memory.weights == weights
    assert p.memory.kv_per_token == kv_per_token == 28 * 1024
    assert p.memory.kv_tokens == tokens == 183_600
    assert p.max_concurrent_reviews == 2 * (tokens // 65536) == 4
    assert p.dtype == "float16"  # Turing: no bf16
    argv = p.instances[0].argv
    assert "--disable-custom-all-reduce" in argv and ("NCCL_P2P_DISABLE", "1") in p.instances[0].env
    assert argv[argv.index("--attention-backend") + 1] == "TRITON_ATTN"
    overrides = json.loads(argv[argv.index("--hf-overrides") + 1])
    assert overrides == {"rope_parameters": {"rope_type": "yarn", "factor": 2.0,
                                             "original_max_position_embeddings": 32768,
                                             "rope_theta": 1e6},
                         "max_position_embeddings": 65536}
    assert [i.env[0] for i in p.instances] == [("CUDA_VISIBLE_DEVICES", "0,1"),
                                               ("CUDA_VISIBLE_DEVICES", "2,3")]


def test_7b_bf16_on_2xA10_is_one_replica_per_gpu() -> None:
    p = plan("2xA10", load_model("Qwen2.5-Coder-7B"))
    kv = int(22731 * MIB * 0.90) - P7B * 2 - reserve(4096, 18944, 3584, 152064)
    tokens = kv // (2 * 28 * 4 * 128 * 2) // 16 * 16  # 56 KiB per token at TP=1
    assert (p.tp, p.replicas_per_node, p.memory.kv_tokens) == (1, 2, tokens)
    assert p.max_concurrent_reviews == 2 * (tokens // 65536) == 2
    assert p.dtype == "bfloat16" and not p.pcie_tp
    assert [i.port for i in p.instances] == [8001, 8002]


def test_32b_bf16_on_1xH200() -> None:
    p = plan("1xH200", load_model("Qwen2.5-Coder-32B"))
    kv = int(143771 * MIB * 0.90) - P32B * 2 - reserve(8192, 27648, 5120, 152064)
    per_token = 2 * 64 * 8 * 128 * 2  # 256 KiB
    assert per_token == 256 * 1024
    assert p.memory.kv_tokens == kv // per_token // 16 * 16
    assert p.max_concurrent_reviews == kv // per_token // 16 * 16 // 65536 == 3
    assert p.max_num_batched_tokens == 8192


def test_32b_awq_on_2xA10_needs_tp2() -> None:
    p = plan("2xA10", load_model("Qwen2.5-Coder-32B"), quantization="awq")
    linear = P32B - 152064 * 5120 * 2
    weights = int(linear * (0.5 + 2.5 / 128)) + 152064 * 5120 * 2 * 2  # 4-bit + fp16 scales
    assert p.tp == 2 and p.memory.weights == weights // 2
    assert p.max_concurrent_reviews >= 1
    assert "--quantization" in p.instances[0].argv and p.model.source.endswith("-AWQ")


def test_30b_a3b_awq_on_rtx4090_needs_fp8_kv() -> None:
    p = plan("1xRTX4090", load_model("Qwen3-Coder-30B-A3B"), quantization="awq")
    weights = int(MOE_LINEAR * (0.5 + 2.5 / 128)) + MOE_EMBED * 2
    kv = int(24217 * MIB * 0.90) - weights - reserve(4096, 8 * 768, 2048, 151936)
    assert p.memory.weights == weights
    assert kv // (2 * 48 * 4 * 128 * 2) < 65536  # bf16 KV: about 40K tokens, not enough
    assert p.memory.kv_dtype == "fp8"
    assert p.memory.kv_tokens == kv // (2 * 48 * 4 * 128 * 1) // 16 * 16
    assert p.max_concurrent_reviews == 1
    assert p.tool_call_parser == "qwen3_coder" and p.hf_overrides is None  # 262K native


def test_30b_a3b_on_1xH200_bf16() -> None:
    p = plan("1xH200", load_model("Qwen3-Coder-30B-A3B"))
    kv = int(143771 * MIB * 0.90) - (MOE_LINEAR + MOE_EMBED) * 2 - reserve(8192, 8 * 768, 2048,
                                                                           151936)
    assert p.memory.kv_tokens == kv // (96 * 1024) // 16 * 16
    assert p.max_concurrent_reviews == 11


def test_7b_bf16_on_rtx4090() -> None:
    p = plan("1xRTX4090", load_model("Qwen2.5-Coder-7B"))
    kv = int(24217 * MIB * 0.90) - P7B * 2 - reserve(4096, 18944, 3584, 152064)
    assert p.memory.kv_tokens == kv // (56 * 1024) // 16 * 16 == 104_032
    assert (p.tp, p.max_concurrent_reviews, p.memory.kv_dtype) == (1, 1, "auto")


def test_30b_a3b_awq_on_4xT4_is_two_tp2_replicas() -> None:
    p = plan("4xT4", load_model("Qwen3-Coder-30B-A3B"), quantization="awq")
    weights = int(MOE_LINEAR * (0.5 + 2.5 / 128)) + MOE_EMBED * 2
    assert weights // 2 > 0.5 * 15095 * MIB  # does not fit one T4 even at 4 bit
    kv = int(15095 * MIB * 0.90) - weights // 2 - reserve(2048, 8 * 768 // 2, 2048, 151936)
    per_token = 2 * 48 * (4 // 2) * 128 * 2
    assert (p.tp, p.replicas_per_node) == (2, 2) and not p.expert_parallel  # 384 % 128 == 0
    assert p.memory.kv_tokens == kv // per_token // 16 * 16
    assert p.max_concurrent_reviews == 2


def test_mixed_cards_plan_as_the_smallest() -> None:
    p = plan("2xA10,1xRTX4090", load_model("Qwen2.5-Coder-7B"), quantization="awq")
    assert p.gpu.name == "A10" and p.replicas_per_node == 3
    assert any("mixed GPU types" in w for w in p.warnings)


def test_moe_4bit_tp4_gets_expert_parallel() -> None:
    p = plan("4xT4", load_model("Qwen3-Coder-30B-A3B"), quantization="gptq",
             max_model_len=131072)
    assert p.tp == 4 and p.expert_parallel  # 768 / 4 = 192, not a multiple of 128
    assert "--enable-expert-parallel" in p.instances[0].argv


def test_kv_heads_replicate_beyond_tp() -> None:
    p = plan("8xH200", load_model("Qwen2.5-Coder-7B"))
    assert p.tp == 1 and p.replicas_per_node == 8 and len(p.instances) == 8


def test_nodes_spread_identical_machines() -> None:
    p = plan("2xA10", load_model("Qwen2.5-Coder-7B"), nodes=3)
    assert len(p.instances) == 6 and {i.host for i in p.instances} == {"node1", "node2", "node3"}
    assert p.instances[0].argv[p.instances[0].argv.index("--host") + 1] == "0.0.0.0"


def test_refusal_names_largest_context_and_nearest_plan() -> None:
    with pytest.raises(PlanRefused) as info:
        plan("1xRTX4090", load_model("Qwen2.5-Coder-32B"), quantization="awq")
    near = info.value.nearest
    assert "largest context that fits is 12,288" in str(info.value)
    assert near is not None and near.max_model_len == 12288 and near.max_concurrent_reviews >= 1


def test_refusal_when_weights_do_not_fit_offers_quantization() -> None:
    with pytest.raises(PlanRefused) as info:
        plan("4xT4", load_model("Qwen2.5-Coder-32B"))
    near = info.value.nearest
    assert "does not fit 4xT4" in str(info.value)
    assert near is not None and near.weights.bits == 4 and near.tp == 4


def test_fp8_weights_refused_on_turing() -> None:
    with pytest.raises(PlanRefused) as info:
        plan("4xT4", load_model("Qwen2.5-Coder-7B"), quantization="fp8")
    assert info.value.nearest is not None and info.value.nearest.weights.method == "awq"


def test_context_beyond_yarn_limit_refused() -> None:
    with pytest.raises(PlanRefused) as info:
        plan("1xH200", load_model("Qwen2.5-Coder-7B"), max_model_len=300_000)
    assert info.value.nearest is not None and info.value.nearest.max_model_len == 131072


@pytest.mark.parametrize("spec, hint", [("4xT10", "T4"), ("2xB300", "known"), ("fourT4", "COUNT")])
def test_bad_gpu_specs(spec: str, hint: str) -> None:
    with pytest.raises(UsageError, match=hint):
        plan(spec, load_model("Qwen2.5-Coder-7B"))


def test_model_dir_without_config(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no config.json"):
        load_model(str(tmp_path))


def test_local_model_dir(tmp_path: Path) -> None:
    cfg = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
           "intermediate_size": 256, "vocab_size": 4096, "max_position_embeddings": 65536}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = plan("1xT4", load_model(str(tmp_path)))
    assert p.instances[0].argv[2] == str(tmp_path.resolve())
    assert ("HF_HUB_OFFLINE", "1") in p.instances[0].env and p.tool_call_parser == "hermes"


def _all_argvs() -> list[list[str]]:
    argvs = []
    for model in ("Qwen2.5-Coder-7B", "Qwen2.5-Coder-14B", "Qwen2.5-Coder-32B",
                  "Qwen3-Coder-30B-A3B"):
        for spec in ("4xT4", "2xA10", "1xRTX4090", "1xH100", "1xH200", "8xH200"):
            for quant in (None, "fp8", "awq", "gptq", "gptq-int8"):
                try:
                    p = plan(spec, load_model(model), quantization=quant)
                except PlanRefused as refused:
                    p = refused.nearest  # type: ignore[assignment]
                if p is not None:
                    argvs.append(list(p.instances[0].argv))
    return argvs


def test_every_flag_exists_in_installed_vllm() -> None:
    VLLM_PYTHON = vllm_python()
    argvs = _all_argvs()
    flags = {a for argv in argvs for a in argv if a.startswith("--")}
    assert {"--hf-overrides", "--enable-expert-parallel", "--disable-custom-all-reduce",
            "--quantization", "--attention-backend", "--kv-cache-dtype"} <= flags
    result = check_argvs(VLLM_PYTHON, argvs)
    assert result["errors"] == []
    assert {"hermes", "qwen3_coder", "qwen3_xml"} <= set(result["tool_parsers"])
    assert "qwen3" in result["reasoning_parsers"]


def test_flag_probe_rejects_unknown_flags_and_parsers() -> None:
    VLLM_PYTHON = vllm_python()
    result = check_argvs(VLLM_PYTHON, [
        ["vllm", "serve", "m", "--rope-scaling", "{}"],  # removed from vLLM
        ["vllm", "serve", "m", "--enable-auto-tool-choice", "--tool-call-parser", "nope"],
    ])
    assert len(result["errors"]) == 2, result["errors"]


def test_yarn_override_is_what_makes_vllm_accept_the_context(tmp_path: Path) -> None:
    """Real model config through vLLM's own ModelConfig: native 16K, planned 32K."""
    VLLM_PYTHON = vllm_python()
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


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["server", "plan", *args])
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def test_cli_text_json_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(["--gpus", "t4-quad", "--model", "Qwen2.5-Coder-7B"], capsys)
    assert code == 0 and "KV tokens per replica = 183,600" in out
    code, out, _ = _cli(["--gpus", "2xA10", "--model", "Qwen2.5-Coder-7B", "--output", "json"],
                        capsys)
    assert code == 0 and json.loads(out)["max_concurrent_reviews"] == 2
    code, out, err = _cli(["--gpus", "1xRTX4090", "--model", "Qwen2.5-Coder-32B",
                           "--quantization", "awq", "--output", "json"], capsys)
    body = json.loads(out)
    assert code == 1 and "12,288" in body["error"] and body["nearest"]["max_model_len"] == 12288
    assert "nearest plan that works" in err
    code, _, err = _cli(["--gpus", "2xB300", "--model", "Qwen2.5-Coder-7B"], capsys)
    assert code == 2 and err.count("\n") == 1 and "unknown GPU type" in err
