"""Pure memory arithmetic for one GPU of a replica. No I/O; every figure is in bytes.

    budget      = total × gpu_memory_utilization
    weights     = (linear params × bytes/param + embedding params × 2 B) / TP
    reserve     = 1 GiB (CUDA graphs, NCCL, non-torch) + peak activations of one
                  prefill chunk + fp32 logits for 256 sequences
    kv          = budget − weights − reserve
    kv/token    = 2 (K and V) × layers × max(1, kv_heads / TP) × head_dim × dtype bytes
    kv tokens   = kv // kv/token, rounded down to vLLM's 16-token blocks
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewbot.errors import UsageError
from reviewbot.server.plan.hardware import GIB
from reviewbot.server.plan.model import ModelSpec

BLOCK = 16
RESERVE_BASE = 1 * GIB
LOGIT_SEQS = 256  # vLLM profiles the sampler at max_num_seqs; size for the 256 ceiling

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
    """All weights of the model; quantized checkpoints keep embeddings/LM head in 16 bit."""
    if fmt.method is None:
        return model.param_count * 2
    return int(model.linear_params * fmt.bytes_per_linear_param) + model.embedding_params * 2


def kv_bytes_per_token(model: ModelSpec, tp: int, dtype_bytes: int) -> int:
    """Per GPU: KV heads are split over TP, and replicated once TP exceeds them."""
    heads = max(1, model.num_kv_heads // tp)
    return 2 * model.num_layers * heads * model.head_dim * dtype_bytes


def reserve_bytes(model: ModelSpec, tp: int, batched_tokens: int) -> int:
    """Non-KV working memory: fixed runtime overhead plus one prefill chunk's activations."""
    per_token = (2 * model.mlp_width // tp + 4 * model.hidden_size) * 2
    logits = LOGIT_SEQS * model.vocab_size * 4
    return RESERVE_BASE + batched_tokens * per_token + logits


@dataclass(frozen=True)
class Memory:
    """One GPU of one replica."""

    gpu_total: int
    utilization: float
    weights: int
    reserve: int
    kv_per_token: int
    kv_dtype: str  # "auto" (model dtype, 2 B) or "fp8" (1 B)

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
        return self.kv_tokens // max_model_len


def gpu_memory(
    model: ModelSpec,
    fmt: WeightFormat,
    *,
    gpu_total: int,
    tp: int,
    utilization: float,
    kv_dtype: str,
    batched_tokens: int,
) -> Memory:
    return Memory(
        gpu_total=gpu_total,
        utilization=utilization,
        weights=weight_bytes(model, fmt) // tp,
        reserve=reserve_bytes(model, tp, batched_tokens),
        kv_per_token=kv_bytes_per_token(model, tp, 1 if kv_dtype.startswith("fp8") else 2),
        kv_dtype=kv_dtype,
    )
