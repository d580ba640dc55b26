"""GPU memory as vLLM spends it: the KV cache predicted within 1% of what vLLM measured on an H200,
hybrid attention counting only its full-attention layers, KV heads replicated beyond the tensor-
parallel size."""

from __future__ import annotations

import json

import pytest

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan

MIB, GIB = 2**20, 2**30
# Measured with vLLM 0.26.0 on one H200 (benchmarks/gpu_serving.py, docs/performance.md):
# (max_num_batched_tokens, max_num_seqs) -> "GPU KV cache size" for Qwen3-Coder-30B-A3B bf16
# at --gpu-memory-utilization 0.9 and 65,536 tokens; (8192, 1024) is vLLM's own default.
H200_MEASURED = {(8192, 256): 731_920, (16384, 256): 725_840, (32768, 256): 707_568,
                 (8192, 1024): 713_552,
                 # benchmarks/gpu_plan.py, 2026-12-02 (vLLM's cache_config_info)
                 (8192, 176): 734_928, (32768, 176): 708_848}


def test_kv_heads_replicate_beyond_tp() -> None:
    p = plan("8xH200", load_model("Qwen2.5-Coder-7B"))
    assert p.tp == 1 and p.replicas_per_node == 8 and len(p.instances) == 8


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
