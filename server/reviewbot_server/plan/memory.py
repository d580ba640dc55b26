"""Pure memory arithmetic for one GPU of a replica. No I/O; every figure is in bytes.

    budget      = total × gpu_memory_utilization
    weights     = (linear params × bytes/param + embedding and vision params × 2 B) / TP
    reserve     = non-torch + CUDA graphs + peak activation, as vLLM profiles them:
                  non-torch  0.25 GiB (+ 0.5 GiB of NCCL buffers with TP > 1)
                  graphs     0.45 GiB + 0.19 MiB per --max-num-seqs
                  peak       max(one prefill chunk's forward, the sampler's dummy run)
                  forward    batched tokens × 1.1 × 2 B × (MLP/expert + attention + 3 × hidden)
                  sampler    0.64 GiB + max_num_seqs × vocab × 14 B (≈3.5 fp32 logit rows)
    kv          = budget − weights − reserve
    kv/token    = 2 (K and V) × full-attention layers × max(1, kv_heads / TP) × head_dim × B
    state/seq   = sliding layers × window × their kv/token + linear layers' recurrent state
    kv tokens   = kv // kv/token, rounded down to vLLM's 16-token blocks
    reviews     = kv // (context × kv/token + state/seq)

The reserve's constants were fitted to vLLM 0.26 on one H200 (Qwen3-Coder-30B-A3B bf16,
docs/performance.md "Serving flags on the H200"): non-torch 0.24 GiB; estimated graphs
0.49 / 0.64 GiB at 256 / 1,024 sequences; peak activation 1.15 / 1.70 / 3.38 GiB at
8K / 16K / 32K batched tokens with 256 sequences and 2.68 GiB at 8K with 1,024. The model
meets each within 0.03 GiB; other models and TP > 1 are extrapolations.
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewbot_server.errors import UsageError
from reviewbot_server.plan.hardware import GIB
from reviewbot_server.plan.model import ModelSpec

BLOCK = 16
NON_TORCH = GIB // 4
NCCL = GIB // 2
GRAPHS_BASE, GRAPHS_PER_SEQ = int(0.45 * GIB), int(0.19 * 2**20)
SAMPLER_BASE, SAMPLER_PER_LOGIT = int(0.64 * GIB), 14
FORWARD_FACTOR = 1.1  # workspace beyond the named activations (fitted)

_QUANT_ALIASES = {
    "bf16": "16", "bfloat16": "16", "fp16": "16", "float16": "16", "none": "16", "auto": "auto",
    "fp8": "fp8",
    "awq": "awq4", "awq_marlin": "awq4", "awq-int4": "awq4", "int4": "awq4", "4bit": "awq4",
    "gptq": "gptq4", "gptq_marlin": "gptq4", "gptq-int4": "gptq4", "moe_wna16": "gptq4",
    "gptq-int8": "gptq8", "gptq8": "gptq8", "int8": "gptq8", "8bit": "gptq8", "awq-int8": "awq8",
}


@dataclass(frozen=True)
class WeightFormat:
    label: str  # what the text output calls it
    bits: int  # bits per quantized (linear) weight
    method: str | None  # vLLM --quantization base method: None, "fp8", "awq", "gptq"
    group_size: int = 128

    @property
    def bytes_per_linear_param(self) -> float:
        if self.method in (None, "fp8"):
            return self.bits / 8
        # group-wise: one fp16 scale and one packed zero point per group
        return self.bits / 8 + (2 + self.bits / 8) / self.group_size


def weight_format(model: ModelSpec, quantization: str | None) -> WeightFormat:
    """The format the weights are served in: the checkpoint's own, or the one asked for."""
    wanted = _QUANT_ALIASES.get((quantization or "auto").lower())
    if wanted is None:
        known = ", ".join(sorted(_QUANT_ALIASES))
        raise UsageError(f"unknown --quantization {quantization!r}; known: {known}")
    q = model.quant
    if wanted == "auto":
        if q is None:
            return WeightFormat("bf16/fp16", 16, None)
        if q.method == "fp8" or (q.method == "compressed-tensors" and q.bits == 8 and not q.group_size):
            return WeightFormat("fp8", 8, "fp8")
        method = "awq" if q.method == "awq" else "gptq"
        return WeightFormat(f"{method.upper()} {q.bits}-bit", q.bits, method, q.group_size or 128)
    if wanted == "16":
        return WeightFormat("bf16/fp16", 16, None)
    if wanted == "fp8":
        return WeightFormat("fp8", 8, "fp8")
    method, bits = wanted[:-1], int(wanted[-1])
    group = q.group_size if q is not None and q.group_size else 128
    return WeightFormat(f"{method.upper()} {bits}-bit", bits, method, group)


def weight_bytes(model: ModelSpec, fmt: WeightFormat) -> int:
    """All weights of the model; quantized checkpoints keep embeddings, LM head and the
    vision tower in 16 bit."""
    if fmt.method is None:
        return model.param_count * 2
    unquantized = model.embedding_params + model.vision_params
    return int(model.linear_params * fmt.bytes_per_linear_param) + unquantized * 2


def _per_layer_kv(model: ModelSpec, tp: int, dtype_bytes: int) -> int:
    """K and V of one token in one attention layer, per GPU: KV heads are split over TP,
    and replicated once TP exceeds them."""
    return 2 * max(1, model.num_kv_heads // tp) * model.head_dim * dtype_bytes


def kv_bytes_per_token(model: ModelSpec, tp: int, dtype_bytes: int) -> int:
    """What every token of a sequence adds: full-attention layers only."""
    return model.kv_layers * _per_layer_kv(model, tp, dtype_bytes)


def state_bytes_per_sequence(model: ModelSpec, tp: int, kv_bytes: int) -> int:
    """What a sequence holds whatever its length: sliding-window layers keep the window
    (plus a block) in the KV dtype, linear-attention layers their recurrent state in the
    model dtype (an fp8 KV cache does not shrink it)."""
    sliding = model.sliding_layers * (model.sliding_window + BLOCK) * _per_layer_kv(
        model, tp, kv_bytes)
    return sliding + model.linear_state_bytes(tp, 2)


def forward_bytes_per_token(model: ModelSpec, tp: int) -> int:
    """Activations of one prefill token at the widest point of a layer, per GPU."""
    mlp = (3 * model.mlp_width + model.hidden_size * max(1, model.experts_per_token)) // tp
    mlp += 3 * model.shared_expert_intermediate_size // tp
    heads = model.num_attention_heads * (2 if model.attn_output_gate else 1)
    attention = (heads + model.num_attention_heads + 2 * model.num_kv_heads) * model.head_dim // tp
    return int(FORWARD_FACTOR * 2 * (mlp + attention + 3 * model.hidden_size))


def reserve_bytes(model: ModelSpec, tp: int, batched_tokens: int, max_num_seqs: int) -> int:
    """Non-KV memory as vLLM profiles it: non-torch, CUDA graphs and the peak activation."""
    forward = batched_tokens * forward_bytes_per_token(model, tp)
    sampler = SAMPLER_BASE + max_num_seqs * model.vocab_size * SAMPLER_PER_LOGIT
    graphs = GRAPHS_BASE + max_num_seqs * GRAPHS_PER_SEQ
    return NON_TORCH + (NCCL if tp > 1 else 0) + graphs + max(forward, sampler)


@dataclass(frozen=True)
class Memory:
    """One GPU of one replica."""

    gpu_total: int
    utilization: float
    weights: int
    reserve: int
    kv_per_token: int
    kv_dtype: str  # "auto" (model dtype, 2 B) or "fp8" (1 B)
    state_per_sequence: int = 0  # sliding windows and recurrent state: fixed per sequence

    @property
    def budget(self) -> int:
        return int(self.gpu_total * self.utilization)

    @property
    def kv(self) -> int:
        return self.budget - self.weights - self.reserve

    @property
    def kv_tokens(self) -> int:
        if self.kv <= 0:
            return 0
        return self.kv // self.kv_per_token // BLOCK * BLOCK

    def reviews(self, max_model_len: int) -> int:
        if self.kv <= 0:
            return 0
        return self.kv // (max_model_len * self.kv_per_token + self.state_per_sequence)


def gpu_memory(
    model: ModelSpec,
    fmt: WeightFormat,
    *,
    gpu_total: int,
    tp: int,
    utilization: float,
    kv_dtype: str,
    batched_tokens: int,
    max_num_seqs: int,
) -> Memory:
    kv_bytes = 1 if kv_dtype.startswith("fp8") else 2
    return Memory(
        gpu_total=gpu_total,
        utilization=utilization,
        weights=weight_bytes(model, fmt) // tp,
        reserve=reserve_bytes(model, tp, batched_tokens, max_num_seqs),
        kv_per_token=kv_bytes_per_token(model, tp, kv_bytes),
        kv_dtype=kv_dtype,
        state_per_sequence=state_bytes_per_sequence(model, tp, kv_bytes),
    )
