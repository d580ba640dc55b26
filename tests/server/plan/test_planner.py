"""Planner: memory math against figures computed by hand from the published config.json
values, topology choices, refusals with the nearest plan, and every emitted flag checked
against the installed vLLM's own parser (in a subprocess; vLLM is never imported here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot.cli import main
from reviewbot_server.errors import UsageError
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import PlanRefused, plan
from reviewbot_server.render.serve import plan_text
from reviewbot_server.tinymodel import build_tiny_model
from tests.server.vllm_flags import check_argvs

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


@pytest.mark.parametrize("spec, hint", [("4xK80", "3.7"), ("2xB300", "known"), ("fourT4", "COUNT")])
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


GPU_VLLM = next(line.split("==")[1] for line in
                (Path(__file__).parents[3] / "server" / "constraints-gpu.txt").read_text().splitlines()
                if line.startswith("vllm=="))


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

# Measured with vLLM 0.26.0 on one H200 (benchmarks/gpu_serving.py, docs/performance.md):
# (max_num_batched_tokens, max_num_seqs) -> "GPU KV cache size" for Qwen3-Coder-30B-A3B bf16
# at --gpu-memory-utilization 0.9 and 65,536 tokens; (8192, 1024) is vLLM's own default.
H200_MEASURED = {(8192, 256): 731_920, (16384, 256): 725_840, (32768, 256): 707_568,
                 (8192, 1024): 713_552,
                 # benchmarks/gpu_plan.py, 2026-12-02 (vLLM's cache_config_info)
                 (8192, 176): 734_928, (32768, 176): 708_848}


@pytest.mark.parametrize("batched, seqs", sorted(H200_MEASURED))
def test_h200_prediction_within_one_percent_of_vllm(batched: int, seqs: int) -> None:
    from reviewbot_server.plan.hardware import GPUS
    from reviewbot_server.plan.memory import gpu_memory, weight_format

    model = load_model("Qwen3-Coder-30B-A3B")
    mem = gpu_memory(model, weight_format(model, None), gpu_total=GPUS["H200"].memory_bytes,
                     tp=1, utilization=0.9, kv_dtype="auto", batched_tokens=batched,
                     max_num_seqs=seqs)
    measured = H200_MEASURED[(batched, seqs)]
    assert abs(mem.kv_tokens - measured) / measured < 0.01, (mem.kv_tokens, measured)
    assert mem.reviews(65536) == measured // 65536  # 11, 11, 10, 10
    assert abs(mem.weights / GIB - 56.93) < 0.1  # vLLM: "Model loading took 56.93 GiB"


def test_qwen35_hybrid_on_4xT10_counts_only_full_attention_layers() -> None:
    """The Turing deployment: 4x T10 16 GB, Qwen3.5-35B-A3B GPTQ, 64K reviews."""
    model = load_model("Qwen3.5-35B-A3B")
    assert (model.kv_layers, model.linear_layers, model.num_layers) == (10, 30, 40)
    assert 34.9e9 < model.param_count < 35.3e9 and model.vision_params > 0.4e9
    p = plan("4xT10", model, quantization="gptq")
    # 10 full-attention layers x 2 KV heads split over TP=2 (one each) x 256 x 2 B
    assert p.memory.kv_per_token == 10 * 2 * 1 * 256 * 2 == 10 * 1024
    # Gated DeltaNet state per sequence: (conv over q,k,v x 3 + 32 heads x 128 x 128) x 30 layers
    assert p.memory.state_per_sequence == 30 * ((2 * 2048 + 4096) * 3 + 32 * 128 * 128) * 2 // 2
    assert (p.tp, p.replicas_per_node, p.max_concurrent_reviews) == (2, 2, 4)
    argv = list(p.instances[0].argv)
    assert argv[argv.index("--quantization") + 1] == "moe_wna16"  # no Marlin on sm_75 in 0.32
    assert json.loads(argv[argv.index("--limit-mm-per-prompt") + 1]) == {"image": 0, "video": 0}
    assert argv[2] == "Qwen/Qwen3.5-35B-A3B-GPTQ-Int4" and "--enable-prefix-caching" in argv
    assert any("hybrid attention: 10 full-attention" in w for w in p.warnings)
    assert any("vision tower" in w for w in p.warnings)
    assert any("gptq_marlin" in w and "#29901" in w for w in p.warnings)
    # every layer counted as full attention would need 4x the KV per token
    full = plan("4xT10", load_model("Qwen3-Coder-30B-A3B"), quantization="gptq")
    assert full.memory.kv_per_token > p.memory.kv_per_token


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


def _write(tmp_path: Path, cfg: dict[str, object]) -> str:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


def test_sliding_window_layers_hold_a_window_not_the_review(tmp_path: Path) -> None:
    """gpt-oss-20b's published architecture: 24 layers alternating 128-token sliding windows
    and full attention, 8 KV heads of 64."""
    cfg = {"architectures": ["GptOssForCausalLM"], "hidden_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
           "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4,
           "vocab_size": 201088, "sliding_window": 128, "max_position_embeddings": 131072,
           "layer_types": ["sliding_attention", "full_attention"] * 12}
    m = load_model(_write(tmp_path, cfg))
    assert (m.kv_layers, m.sliding_layers, m.sliding_window) == (12, 12, 128)
    p = plan("1xRTX4090", m, quantization="awq")
    assert p.memory.kv_per_token == 12 * 2 * 8 * 64 * p.memory.kv_per_token // (12 * 2 * 8 * 64)
    assert p.memory.state_per_sequence == 12 * (128 + 16) * 2 * 8 * 64 * (
        1 if p.memory.kv_dtype == "fp8" else 2)


def test_gemma_pattern_and_nested_text_config(tmp_path: Path) -> None:
    """Gemma 3 27B's published layout: text_config nested, every 6th layer global, 1,024-token
    windows elsewhere, a SigLIP vision tower beside it."""
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {"hidden_size": 5376, "num_hidden_layers": 62, "num_attention_heads": 32,
                           "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
                           "vocab_size": 262208, "sliding_window": 1024,
                           "sliding_window_pattern": 6, "max_position_embeddings": 131072},
           "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27,
                             "intermediate_size": 4304}}
    m = load_model(_write(tmp_path, cfg))
    assert (m.kv_layers, m.sliding_layers, m.sliding_window) == (10, 52, 1024)
    assert m.vision_params > 0.4e9 and 26e9 < m.param_count < 29e9


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


@pytest.mark.parametrize("config, says", [
    ('{"hidden_size": Infinity, "num_attention_heads": 16, "num_hidden_layers": 24}',
     "Infinity is not a number"),
    ('{"hidden_size": 1e400, "num_attention_heads": 16, "num_hidden_layers": 24}',
     "not a finite number"),
    ('{"hidden_size": NaN, "num_attention_heads": 16, "num_hidden_layers": 24}', "NaN"),
    ('{"text_config": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
])
def test_a_hostile_config_json_is_one_line_not_an_internal_error(tmp_path: Path, config: str,
                                                                 says: str) -> None:
    (tmp_path / "config.json").write_text(config)
    with pytest.raises(UsageError, match=says) as caught:
        load_model(str(tmp_path))
    assert "\n" not in str(caught.value)


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
