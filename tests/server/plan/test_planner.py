"""Planner: plans against figures computed by hand from the published config.json values,
topology choices, refusals with the nearest plan, and the `plan` command's outputs (the flags
against vLLM's own parser: test_topology.py; the memory fit: test_memory.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot.cli import main
from reviewbot_server.errors import UsageError
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import PlanRefused, plan

MIB, GIB = 2**20, 2**30

# Hand-computed parameter counts: embeddings (vocab × hidden × 2, untied) + layers × (q,o +
# k,v projections + 3 MLP matrices, or 128 experts × 3 matrices + router for the MoE).
P7B = 152064 * 3584 * 2 + 28 * (3584 * 3584 * 2 + 3584 * 512 * 2 + 3 * 3584 * 18944)
P32B = 152064 * 5120 * 2 + 64 * (5120 * 5120 * 2 + 5120 * 1024 * 2 + 3 * 5120 * 27648)
MOE_LINEAR = 48 * (2048 * 4096 * 2 + 2048 * 512 * 2 + 128 * 3 * 2048 * 768 + 2048 * 128)
MOE_EMBED = 151936 * 2048 * 2


def reserve(tokens: int, seqs: int, forward_per_token: int, vocab: int, tp: int = 1) -> int:
    # non-torch (+ NCCL with TP) + CUDA graphs + max(prefill forward, sampler dummy run), as
    # fitted to vLLM 0.26 on the H200 (server/reviewbot_server/plan/memory.py)
    graphs = int(0.45 * GIB) + seqs * int(0.19 * MIB)
    sampler = int(0.64 * GIB) + seqs * vocab * 14
    return GIB // 4 + (GIB // 2 if tp > 1 else 0) + graphs + max(tokens * forward_per_token, sampler)


# Forward activation bytes per prefill token (1.1 × 2 B × (3 × MLP width + hidden × top-k,
# + attention q, o, k, v + 3 × hidden)), per GPU
FWD_7B_TP1 = int(1.1 * 2 * (3 * 18944 + 3584 + (28 + 28 + 8) * 128 + 3 * 3584))
FWD_7B_TP2 = int(1.1 * 2 * ((3 * 18944 + 3584) // 2 + (28 + 28 + 8) * 128 // 2 + 3 * 3584))
FWD_MOE = int(1.1 * 2 * (3 * 8 * 768 + 2048 * 8 + (32 + 32 + 8) * 128 + 3 * 2048))


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
    kv = budget - weights - reserve(4096, 32, FWD_7B_TP2, 152064, tp=2)
    tokens = kv // kv_per_token // 16 * 16
    assert (p.tp, p.replicas_per_node) == (2, 2)
    assert (p.max_num_seqs, p.max_num_batched_tokens) == (32, 4096)
    assert p.memory.weights == weights
    assert p.memory.kv_per_token == kv_per_token == 28 * 1024
    assert p.memory.kv_tokens == tokens == 159_728
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
    kv = int(22731 * MIB * 0.90) - P7B * 2 - reserve(4096, 16, FWD_7B_TP1, 152064)
    tokens = kv // (2 * 28 * 4 * 128 * 2) // 16 * 16  # 56 KiB per token at TP=1
    assert (p.tp, p.replicas_per_node, p.memory.kv_tokens) == (1, 2, tokens)
    assert p.max_concurrent_reviews == 2 * (tokens // 65536) == 2
    assert p.dtype == "bfloat16" and not p.pcie_tp
    assert [i.port for i in p.instances] == [8001, 8002]


def test_32b_bf16_on_1xH200() -> None:
    p = plan("1xH200", load_model("Qwen2.5-Coder-32B"))
    fwd = int(1.1 * 2 * (3 * 27648 + 5120 + (40 + 40 + 16) * 128 + 3 * 5120))
    base = int(143155 * MIB * 0.90) - P32B * 2
    kv = base - reserve(16384, 56, fwd, 152064)  # 32K would cost more than 5% of the KV cache
    per_token = 2 * 64 * 8 * 128 * 2  # 256 KiB
    assert per_token == 256 * 1024
    assert p.memory.kv_tokens == kv // per_token // 16 * 16
    assert p.max_concurrent_reviews == kv // per_token // 16 * 16 // 65536 == 3
    assert p.max_num_batched_tokens == 16384
    assert kv >= 0.95 * (base - reserve(8192, 56, fwd, 152064))
    assert base - reserve(32768, 56, fwd, 152064) < 0.95 * (base - reserve(8192, 56, fwd, 152064))


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
    kv = int(24217 * MIB * 0.90) - weights - reserve(4096, 16, FWD_MOE, 151936)
    assert p.memory.weights == weights
    assert kv // (2 * 48 * 4 * 128 * 2) < 65536  # bf16 KV: about 40K tokens, not enough
    assert p.memory.kv_dtype == "fp8"
    assert p.memory.kv_tokens == kv // (2 * 48 * 4 * 128 * 1) // 16 * 16
    assert p.max_concurrent_reviews == 1
    assert p.tool_call_parser == "qwen3_coder" and p.hf_overrides is None  # 262K native


def test_30b_a3b_on_1xH200_bf16() -> None:
    p = plan("1xH200", load_model("Qwen3-Coder-30B-A3B"), quantization="bf16")
    base = int(143155 * MIB * 0.90) - (MOE_LINEAR + MOE_EMBED) * 2
    # the prefill chunk raised to 32K: it costs 3.5% of the KV cache (measured: 708,848 tokens
    # against 734,928 at 8K, with 176 sequences) and took 2-3 s off a 1 MB review
    assert (p.max_num_seqs, p.max_num_batched_tokens) == (168, 32768)
    kv = base - reserve(32768, 168, FWD_MOE, 151936)
    assert p.memory.kv_tokens == kv // (96 * 1024) // 16 * 16 == 708_320
    assert kv >= 0.95 * (base - reserve(8192, 168, FWD_MOE, 151936))
    assert p.max_concurrent_reviews == 10
    assert p.compared is not None and p.compared.flags == "--quantization fp8 --kv-cache-dtype fp8"


# vLLM 0.26 on one H200, Qwen3-Coder-30B-A3B's shape, the planner's flags (issue 36)
MEASURED_KV_TOKENS = {"bf16": 709_008, "fp8": 2_028_144}


def test_fp8_where_the_card_has_it_with_both_plans_measured_kv() -> None:
    p = plan("1xH200", load_model("Qwen3-Coder-30B-A3B"))
    assert (p.weights.method, p.memory.kv_dtype) == ("fp8", "fp8")
    assert p.model.source == "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"
    argv = p.instances[0].argv
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8" and "--quantization" in argv
    assert abs(p.memory.kv_tokens / MEASURED_KV_TOKENS["fp8"] - 1) < 0.005
    assert p.compared is not None and p.compared.flags == "--quantization bf16"
    assert abs(p.compared.kv_tokens / MEASURED_KV_TOKENS["bf16"] - 1) < 0.005
    assert (p.max_concurrent_reviews, p.compared.reviews) == (30, 10)


@pytest.mark.parametrize("gpus", ["1xA100-80", "4xT4", "2xA10"])
def test_no_fp8_on_cards_without_fp8_tensor_cores(gpus: str) -> None:
    model = load_model("Qwen3-Coder-30B-A3B" if gpus == "1xA100-80" else "Qwen2.5-Coder-7B")
    p = plan(gpus, model)
    assert p.weights.method != "fp8" and p.memory.kv_dtype != "fp8" and p.compared is None


def test_a_choice_of_kv_cache_or_a_model_without_an_fp8_build_is_planned_as_asked() -> None:
    assert plan("1xH200", load_model("Qwen3-Coder-30B-A3B"), kv_cache_dtype="auto").compared \
        is None
    seven = plan("1xH200", load_model("Qwen2.5-Coder-7B"))  # Qwen publishes no FP8 build of it
    assert seven.weights.method is None and seven.compared is None


def test_7b_bf16_on_rtx4090() -> None:
    p = plan("1xRTX4090", load_model("Qwen2.5-Coder-7B"))
    kv = int(24217 * MIB * 0.90) - P7B * 2 - reserve(4096, 16, FWD_7B_TP1, 152064)
    assert p.memory.kv_tokens == kv // (56 * 1024) // 16 * 16 == 107_200
    assert (p.tp, p.max_concurrent_reviews, p.memory.kv_dtype) == (1, 1, "auto")


def test_30b_a3b_awq_on_4xT4_is_two_tp2_replicas() -> None:
    p = plan("4xT4", load_model("Qwen3-Coder-30B-A3B"), quantization="awq")
    weights = int(MOE_LINEAR * (0.5 + 2.5 / 128)) + MOE_EMBED * 2
    assert weights // 2 > 0.5 * 15095 * MIB  # does not fit one T4 even at 4 bit
    fwd = int(1.1 * 2 * ((3 * 8 * 768 + 2048 * 8) // 2 + (32 + 32 + 8) * 128 // 2 + 3 * 2048))
    assert p.max_num_batched_tokens == 8192  # raised: its activations fit under the sampler's
    kv = int(15095 * MIB * 0.90) - weights // 2 - reserve(8192, 16, fwd, 151936, tp=2)
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


def test_nodes_spread_identical_machines() -> None:
    p = plan("2xA10", load_model("Qwen2.5-Coder-7B"), nodes=3)
    assert len(p.instances) == 6 and {i.host for i in p.instances} == {"node1", "node2", "node3"}
    assert p.instances[0].argv[p.instances[0].argv.index("--host") + 1] == "0.0.0.0"


def test_refusal_names_largest_context_and_nearest_plan() -> None:
    with pytest.raises(PlanRefused) as info:
        plan("1xRTX4090", load_model("Qwen2.5-Coder-32B"), quantization="awq")
    near = info.value.nearest
    assert "largest context that fits is 11,264" in str(info.value)
    assert near is not None and near.max_model_len == 11264 and near.max_concurrent_reviews >= 1


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


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["server", "plan", *args])
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def test_cli_text_json_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(["--gpus", "t4-quad", "--model", "Qwen2.5-Coder-7B"], capsys)
    assert code == 0 and "KV tokens per replica = 159,728" in out
    code, out, _ = _cli(["--gpus", "2xA10", "--model", "Qwen2.5-Coder-7B", "--output", "json"],
                        capsys)
    assert code == 0 and json.loads(out)["max_concurrent_reviews"] == 2
    code, out, err = _cli(["--gpus", "1xRTX4090", "--model", "Qwen2.5-Coder-32B",
                           "--quantization", "awq", "--output", "json"], capsys)
    body = json.loads(out)
    assert code == 1 and "11,264" in body["error"] and body["nearest"]["max_model_len"] == 11264
    assert "nearest plan that works" in err
    code, _, err = _cli(["--gpus", "2xB300", "--model", "Qwen2.5-Coder-7B"], capsys)
    assert code == 2 and err.count("\n") == 1 and "unknown GPU type" in err


# -- issue 13: the deployments of the product's origin, hybrid attention, calibration ----------


def test_tensor_parallel_override_renders_the_users_deployment() -> None:
    model = load_model("Qwen3.5-35B-A3B")
    p = plan("4xT10", model, quantization="gptq", tensor_parallel_size=4)
    assert (p.tp, p.replicas_per_node, len(p.instances)) == (4, 1, 1)
    assert p.max_concurrent_reviews == 9  # weights spread over 4 cards leave more for KV
    assert p.instances[0].argv[p.instances[0].argv.index("--tensor-parallel-size") + 1] == "4"
    said = [w for w in p.warnings if w.startswith("as asked")]
    assert said and "would choose TP=2 × 2 replica(s), 4 review(s)" in said[0]
    one = plan("2xA10", load_model("Qwen2.5-Coder-7B"), replicas=1)
    assert (one.tp, one.replicas_per_node, len(one.instances)) == (1, 1, 1)
    with pytest.raises(UsageError, match="possible: 1, 2, 4"):
        plan("4xT10", model, quantization="gptq", tensor_parallel_size=8)
    with pytest.raises(UsageError, match="hold 1 to 2"):
        plan("2xA10", load_model("Qwen2.5-Coder-7B"), replicas=3)


def test_a_model_that_fits_nowhere_gets_the_fewest_gpus_that_fit(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(["--gpus", "1xRTX4090", "--model", "Qwen3-235B-A22B", "--output",
                           "json"], capsys)
    body = json.loads(out)
    assert code == 1 and body["nearest"] is not None
    assert body["nearest"]["tensor_parallel_size"] == 8
    assert any(a.startswith("--gpus 8xRTX4090") for a in body["alternatives"])
    # no AWQ checkpoint is published for it: the plan says to bring one, names none
    assert body["nearest"]["instances"][0]["argv"][2] == "Qwen/Qwen3-235B-A22B-Instruct-2507"
    assert any("no published AWQ 4-bit checkpoint" in w for w in body["nearest"]["warnings"])


def test_fp16_on_a_bf16_model_warns_of_overflow() -> None:
    p = plan("2xT10", load_model("Qwen2.5-Coder-7B"))
    assert any("overflows to inf" in w for w in p.warnings)
    awq = plan("2xT10", load_model("Qwen2.5-Coder-7B"), quantization="awq")
    assert not any("overflows to inf" in w for w in awq.warnings)


@pytest.mark.parametrize("cfg", [
    ["not", "an", "object"],
    {"hidden_size": "wide", "num_attention_heads": 16, "num_hidden_layers": 4},
    {"hidden_size": 2048, "num_attention_heads": 0, "num_hidden_layers": 4},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "linear_num_key_heads": "many", "layer_types": ["linear_attention"] * 4},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "text_config": {"layer_types": {"0": "full"}}, "vision_config": {"depth": "deep"}},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "sliding_window": [128], "layer_types": ["sliding_attention"] * 4},
    # negative and absurd sizes once planned a KV cache larger than the card
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "intermediate_size": -11008},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4, "vocab_size": -5},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "num_experts": -8, "moe_intermediate_size": 768},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "max_position_embeddings": -32768},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "rope_scaling": {"rope_type": "yarn", "factor": -4.0}},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "num_key_value_heads": 64},
    {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
     "quantization_config": {"quant_method": "gptq", "bits": -4}},
    {"hidden_size": 2**40, "num_attention_heads": 16, "num_hidden_layers": 4},
])
def test_a_config_json_with_unusable_values_is_one_line_exit_2(
        tmp_path: Path, cfg: object, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, _, err = _cli(["--gpus", "1xH200", "--model", str(tmp_path)], capsys)
    assert code == 2 and err.count("\n") == 1 and "config.json" in err, err
    assert "Traceback" not in err


def _alternative_flags(text: str) -> list[str]:
    """The flags of a "would work" line: its tokens up to the explanation."""
    flags: list[str] = []
    for token in text.split():
        if token.startswith("("):
            break
        flags.append(token.rstrip(":"))
        if token.endswith(":"):
            break
    return flags


def _with(argv: list[str], flags: list[str]) -> list[str]:
    """`argv` with `flags` replacing the same options."""
    out = list(argv)
    for name, value in zip(flags[::2], flags[1::2]):
        if name in out:
            out[out.index(name) + 1] = value
        else:
            out += [name, value]
    return out


@pytest.mark.parametrize("argv", [
    ["--gpus", "1xA10", "--model", "Qwen3-235B-A22B"],
    ["--gpus", "1xRTX4090", "--model", "Qwen3-235B-A22B"],
    ["--gpus", "1xRTX4090", "--model", "Qwen2.5-Coder-32B", "--quantization", "awq"],
    ["--gpus", "4xT4", "--model", "Qwen2.5-Coder-32B"],
    ["--gpus", "1xT4", "--model", "Qwen3-Coder-30B-A3B"],
    ["--gpus", "1xA10", "--model", "Qwen2.5-Coder-32B", "--max-model-len", "131072"],
])
def test_every_suggested_alternative_plans(argv: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """What a refusal says "would work" does work: planned again, each exits 0."""
    code, out, _ = _cli([*argv, "--output", "json"], capsys)
    assert code == 1
    alternatives = json.loads(out)["alternatives"]
    assert alternatives
    for alt in alternatives:
        again, _, err = _cli(_with(argv, _alternative_flags(alt)), capsys)
        assert again == 0, (alt, err)


def test_a_card_too_small_for_the_model_gets_a_model_that_fits(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(["--gpus", "1xA10", "--model", "Qwen3-235B-A22B", "--output", "json"],
                        capsys)
    alternatives = json.loads(out)["alternatives"]
    assert code == 1 and any(a.startswith("--model ") for a in alternatives)
    assert not any(a.startswith("--kv-cache-dtype") for a in alternatives)


def test_a_refusal_suggests_only_a_4_bit_format_whose_checkpoint_is_published() -> None:
    """Qwen3.5-35B-A3B is published as GPTQ-Int4, not AWQ: the suggestion names GPTQ and its
    nearest plan runs that checkpoint; a model published as AWQ keeps AWQ."""
    with pytest.raises(PlanRefused) as refused:
        plan("4xT10", load_model("Qwen3.5-35B-A3B"))
    assert any(alt.startswith("--quantization gptq") for alt in refused.value.alternatives)
    assert not any("awq" in alt for alt in refused.value.alternatives)
    nearest = refused.value.nearest
    assert nearest is not None and nearest.model.source == "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4"
    assert nearest.max_concurrent_reviews == 4
    with pytest.raises(PlanRefused) as awq:
        plan("4xT4", load_model("Qwen2.5-Coder-32B"))
    assert any(alt.startswith("--quantization awq") for alt in awq.value.alternatives)
