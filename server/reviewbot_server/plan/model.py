"""ModelSpec: the numbers the planner needs, read from a local model directory's config.json.

No hub access: a directory path, or a name from the small built-in catalog of Qwen coder
models (their published config.json values).

Layers are counted by kind, because only full-attention layers keep a KV cache that grows
with the sequence: sliding-window layers (gpt-oss, Gemma) keep at most a window, and linear
attention layers (Qwen3.5 / Qwen3-Next Gated DeltaNet) a fixed recurrent state per sequence.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from reviewbot_server.errors import UsageError


@dataclass(frozen=True)
class Quant:
    """A checkpoint's quantization: `method` as vLLM names it in config.json."""

    method: str  # "gptq", "awq", "fp8", "compressed-tensors", …
    bits: int
    group_size: int = 128


@dataclass(frozen=True)
class ModelSpec:
    name: str
    source: str  # what `vllm serve` gets: the directory, or the hub id for catalog models
    architecture: str
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    native_context: int = 32_768
    rope_type: str | None = None  # already configured scaling, e.g. "yarn"
    rope_factor: float = 1.0
    rope_theta: float = 10_000.0
    quant: Quant | None = None
    local: bool = False
    # layer kinds (full_layers + sliding_layers + linear_layers == num_layers)
    full_layers: int = -1  # -1: every layer is full attention
    sliding_layers: int = 0
    sliding_window: int = 0
    linear_layers: int = 0
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_dim: int = 0
    linear_value_dim: int = 0
    linear_conv_kernel: int = 4
    attn_output_gate: bool = False  # Qwen3.5: q_proj also produces a gate (twice as wide)
    shared_expert_intermediate_size: int = 0
    vision_params: int = 0  # a vision tower a text review never uses, loaded all the same
    torch_dtype: str = "bfloat16"  # what the checkpoint was trained and saved in

    @property
    def attention_layers(self) -> int:
        """Layers with softmax attention (their weights), full or sliding."""
        return self.num_layers - self.linear_layers

    @property
    def kv_layers(self) -> int:
        """Layers whose KV cache grows with every token of a sequence."""
        return self.num_layers if self.full_layers < 0 else self.full_layers

    @property
    def moe(self) -> bool:
        return self.num_experts > 0

    @property
    def effective_context(self) -> int:
        """Context the checkpoint serves without overrides (native × configured YaRN factor)."""
        return int(self.native_context * (self.rope_factor if self.rope_type else 1.0))

    @property
    def embedding_params(self) -> int:
        """Input embedding + LM head: quantized checkpoints keep these in 16 bit."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def linear_params(self) -> int:
        """Attention + MLP/expert weights in all layers: what quantization shrinks."""
        h = self.hidden_size
        q_out = self.num_attention_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        attention = h * q_out * (3 if self.attn_output_gate else 2) + h * kv_out * 2
        key_dim = self.linear_key_heads * self.linear_key_dim
        value_dim = self.linear_value_heads * self.linear_value_dim
        # Gated DeltaNet: q, k, v, z in; b, a gates; depthwise conv; out
        linear = (h * (2 * key_dim + 2 * value_dim) + h * 2 * self.linear_value_heads
                  + (2 * key_dim + value_dim) * self.linear_conv_kernel + value_dim * h)
        if self.moe:
            mlp = self.num_experts * 3 * h * self.moe_intermediate_size
            mlp += h * self.num_experts  # router
            mlp += 3 * h * self.shared_expert_intermediate_size
        else:
            mlp = 3 * h * self.intermediate_size
        return (self.attention_layers * attention + self.linear_layers * linear
                + self.num_layers * mlp)

    @property
    def param_count(self) -> int:
        return self.embedding_params + self.linear_params + self.vision_params

    def linear_state_bytes(self, tp: int, dtype_bytes: int) -> int:
        """One sequence's recurrent state in all linear-attention layers, per GPU: the conv
        window over q, k, v and the (value heads × key dim × value dim) delta-rule state."""
        if not self.linear_layers:
            return 0
        key_dim = self.linear_key_heads * self.linear_key_dim
        value_dim = self.linear_value_heads * self.linear_value_dim
        conv = (2 * key_dim + value_dim) * (self.linear_conv_kernel - 1)
        ssm = self.linear_value_heads * self.linear_key_dim * self.linear_value_dim
        return self.linear_layers * (conv + ssm) * dtype_bytes // tp

    @property
    def mlp_width(self) -> int:
        """Widest per-token MLP activation: the dense MLP, or top-k experts for MoE."""
        if self.moe:
            return self.experts_per_token * self.moe_intermediate_size
        return self.intermediate_size

    @property
    def family(self) -> str:
        arch, name = self.architecture.lower(), self.name.lower()
        if "qwen3_5" in arch or "qwen3.5" in name:
            return "qwen3.5"
        if arch.startswith("qwen3"):
            return "qwen3-coder" if "coder" in name else "qwen3"
        if arch.startswith("qwen2"):
            return "qwen2.5"
        return "other"


def _quant(cfg: dict[str, Any]) -> Quant | None:
    qc = cfg.get("quantization_config")
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method", "unknown")).lower()
    if method == "fp8":
        return Quant("fp8", 8, 0)
    bits = int(qc.get("bits") or qc.get("w_bit") or 4)
    group = int(qc.get("group_size") or qc.get("q_group_size") or 128)
    if method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        first: Any = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        weights: Any = (first.get("weights") or {}) if isinstance(first, dict) else {}
        bits = int(weights.get("num_bits") or 8)
        group = int(weights.get("group_size") or 0)
    return Quant(method, bits, group)


def spec_from_config(cfg: dict[str, Any], *, name: str, source: str, local: bool) -> ModelSpec:
    """The spec, or a one-line UsageError for a config.json whose values are not what a
    decoder's are (a string where a count goes, a zero head count, a list for an object)."""
    if not isinstance(cfg, dict):
        raise UsageError(f"{source}/config.json is not a JSON object")
    try:
        spec = _spec(cfg, name=name, source=source, local=local)
    except (TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError,
            RecursionError) as exc:
        raise UsageError(f"{source}/config.json has a value the planner cannot use "
                         f"({type(exc).__name__}: {str(exc)[:120]})") from None
    _check(spec, source)
    return spec


# a count beyond these is no model a card can hold: a typo or a hostile file
_MAX_COUNT = 2**31
_AT_LEAST_ONE = ("num_layers", "num_attention_heads", "num_kv_heads", "head_dim", "hidden_size",
                 "vocab_size", "intermediate_size", "native_context", "linear_conv_kernel")


def _check(spec: ModelSpec, source: str) -> None:
    """Every number in range, named in one line: a negative size planned a KV cache larger
    than the card."""
    for f in fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        low = 1 if f.name in _AT_LEAST_ONE else (-1 if f.name == "full_layers" else 0)
        if isinstance(value, float) and not (math.isfinite(value) and value > 0):
            raise UsageError(f"{source}/config.json: {f.name} must be a positive number")
        if not low <= value <= _MAX_COUNT:
            raise UsageError(f"{source}/config.json: {f.name} is {value}, outside "
                             f"{low}..{_MAX_COUNT}")
    if spec.experts_per_token > spec.num_experts or spec.num_kv_heads > spec.num_attention_heads:
        raise UsageError(f"{source}/config.json: more experts per token than experts, or more "
                         "KV heads than attention heads")
    if spec.quant and not (1 <= spec.quant.bits <= 16 and 0 <= spec.quant.group_size <= 2**20):
        raise UsageError(f"{source}/config.json: quantization bits or group size out of range")
    if spec.full_layers + spec.sliding_layers + spec.linear_layers > spec.num_layers:
        raise UsageError(f"{source}/config.json: more layers by kind than num_hidden_layers")


def _spec(cfg: dict[str, Any], *, name: str, source: str, local: bool) -> ModelSpec:
    text = cfg.get("text_config")  # multimodal wrappers (Qwen3.5) nest the LM config
    inner = {**cfg, **text} if isinstance(text, dict) else cfg
    try:
        hidden = int(inner["hidden_size"])
        heads = int(inner["num_attention_heads"])
        layers = int(inner["num_hidden_layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{source}/config.json lacks a usable {exc} for a decoder model") from exc
    rope = inner.get("rope_scaling") or inner.get("rope_parameters") or {}
    rope = rope if isinstance(rope, dict) else {}
    rope_type = rope.get("rope_type") or rope.get("type")
    if rope_type in ("default", None):
        rope_type = None
    native = int(inner.get("max_position_embeddings") or 32_768)
    if rope_type and rope.get("original_max_position_embeddings"):
        native = int(rope["original_max_position_embeddings"])
    archs = cfg.get("architectures") or ["unknown"]
    kinds = _layer_kinds(inner, layers)
    return ModelSpec(
        name=name,
        source=source,
        architecture=str(archs[0]),
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=int(inner.get("num_key_value_heads") or heads),
        head_dim=int(inner.get("head_dim") or hidden // heads),
        hidden_size=hidden,
        intermediate_size=int(inner.get("intermediate_size") or 4 * hidden),
        vocab_size=int(inner.get("vocab_size") or 32_000),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        num_experts=int(inner.get("num_experts") or inner.get("num_local_experts") or 0),
        experts_per_token=int(inner.get("num_experts_per_tok") or 0),
        moe_intermediate_size=int(inner.get("moe_intermediate_size") or 0),
        native_context=native,
        rope_type=rope_type,
        rope_factor=float(rope.get("factor", 1.0)) if rope_type else 1.0,
        rope_theta=float(inner.get("rope_theta") or rope.get("rope_theta") or 10_000.0),
        quant=_quant(cfg),
        local=local,
        **kinds,
        linear_key_heads=int(inner.get("linear_num_key_heads") or 0),
        linear_value_heads=int(inner.get("linear_num_value_heads") or 0),
        linear_key_dim=int(inner.get("linear_key_head_dim") or 0),
        linear_value_dim=int(inner.get("linear_value_head_dim") or 0),
        linear_conv_kernel=int(inner.get("linear_conv_kernel_dim") or 4),
        attn_output_gate=bool(inner.get("attn_output_gate", False)),
        shared_expert_intermediate_size=int(inner.get("shared_expert_intermediate_size") or 0),
        vision_params=_vision_params(cfg.get("vision_config")),
        torch_dtype=str(inner.get("torch_dtype") or inner.get("dtype") or cfg.get("torch_dtype")
                        or cfg.get("dtype") or "bfloat16"),
    )


def _layer_kinds(cfg: dict[str, Any], layers: int) -> dict[str, int]:
    """Full, sliding and linear layers from `layer_types`, or the interval/pattern keys."""
    types = cfg.get("layer_types")
    window = int(cfg.get("sliding_window") or 0)
    if isinstance(types, list) and len(types) == layers:
        linear = sum(1 for t in types if "linear" in str(t))
        sliding = sum(1 for t in types if "sliding" in str(t) or "chunked" in str(t))
        if sliding and not window:
            sliding = 0  # a sliding type without a window: count it as full
        return {"full_layers": layers - linear - sliding, "sliding_layers": sliding,
                "sliding_window": window if sliding else 0, "linear_layers": linear}
    interval = int(cfg.get("full_attention_interval") or 0)
    if interval > 1 and cfg.get("linear_num_value_heads"):
        full = layers // interval  # Qwen3-Next: every interval-th layer is full attention
        return {"full_layers": full, "sliding_layers": 0, "sliding_window": 0,
                "linear_layers": layers - full}
    pattern = int(cfg.get("sliding_window_pattern") or 0)
    if pattern > 1 and window:
        full = layers // pattern  # Gemma: every pattern-th layer is global
        return {"full_layers": full, "sliding_layers": layers - full, "sliding_window": window,
                "linear_layers": 0}
    return {"full_layers": layers, "sliding_layers": 0, "sliding_window": 0, "linear_layers": 0}


def _vision_params(vc: object) -> int:
    """A ViT tower's size from its config (blocks of attention + MLP, plus the merger)."""
    if not isinstance(vc, dict):
        return 0
    h = int(vc.get("hidden_size") or 0)
    depth = int(vc.get("depth") or vc.get("num_hidden_layers") or 0)
    inter = int(vc.get("intermediate_size") or 4 * h)
    out = int(vc.get("out_hidden_size") or h)
    merge = int(vc.get("spatial_merge_size") or 2) ** 2
    return depth * (4 * h * h + 2 * h * inter) + (h * merge) ** 2 + h * merge * out


def _qwen(hidden: int, layers: int, heads: int, kv: int, inter: int, **extra: Any) -> dict[str, Any]:
    arch = extra.pop("arch", "Qwen2ForCausalLM")
    return {
        "architectures": [arch],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": 128,
        "intermediate_size": inter,
        "vocab_size": extra.pop("vocab", 152_064),
        "max_position_embeddings": extra.pop("ctx", 32_768),
        "tie_word_embeddings": False,
        "rope_theta": extra.pop("theta", 1_000_000.0),
        **extra,
    }


_QWEN35_VISION = {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304,
                  "out_hidden_size": 2048, "spatial_merge_size": 2}

# Published config.json values of the Instruct checkpoints (hub id → config).
CATALOG: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-Coder-7B-Instruct": _qwen(3584, 28, 28, 4, 18_944),
    "Qwen/Qwen2.5-Coder-14B-Instruct": _qwen(5120, 48, 40, 8, 13_824),
    "Qwen/Qwen2.5-Coder-32B-Instruct": _qwen(5120, 64, 40, 8, 27_648),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": _qwen(
        2048, 48, 32, 4, 6144, arch="Qwen3MoeForCausalLM", vocab=151_936, ctx=262_144, theta=10_000_000.0,
        num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768,
    ),
    "Qwen/Qwen3-235B-A22B-Instruct-2507": _qwen(
        4096, 94, 64, 4, 12_288, arch="Qwen3MoeForCausalLM", vocab=151_936, ctx=262_144,
        theta=5_000_000.0, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=1536,
    ),
    # a multimodal wrapper: the language model in text_config, a vision tower beside it
    "Qwen/Qwen3.5-35B-A3B": {
        "architectures": ["Qwen3_5MoeForConditionalGeneration"],
        "tie_word_embeddings": False,
        "vision_config": _QWEN35_VISION,
        "text_config": {
            **_qwen(2048, 40, 16, 2, 0, vocab=248_320, ctx=262_144, theta=10_000_000.0,
                    num_experts=256, num_experts_per_tok=8, moe_intermediate_size=512,
                    shared_expert_intermediate_size=512),
            "head_dim": 256, "attn_output_gate": True, "full_attention_interval": 4,
            "layer_types": ["linear_attention"] * 3 + ["full_attention"] + (
                ["linear_attention"] * 3 + ["full_attention"]) * 9,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32,
            "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "torch_dtype": "bfloat16",
        },
    },
}

# Quantized checkpoints the model's publisher has released (hub id suffixes); a plan names
# no other: for anything else the user brings a checkpoint directory.
PUBLISHED: dict[str, tuple[str, ...]] = {
    "Qwen/Qwen2.5-Coder-7B-Instruct": ("-AWQ", "-GPTQ-Int4", "-GPTQ-Int8"),
    "Qwen/Qwen2.5-Coder-14B-Instruct": ("-AWQ", "-GPTQ-Int4", "-GPTQ-Int8"),
    "Qwen/Qwen2.5-Coder-32B-Instruct": ("-AWQ", "-GPTQ-Int4", "-GPTQ-Int8"),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ("-FP8",),
    "Qwen/Qwen3-235B-A22B-Instruct-2507": ("-FP8",),
    "Qwen/Qwen3.5-35B-A3B": ("-FP8", "-GPTQ-Int4"),
}


def _catalog_key(name: str) -> str | None:
    def short(n: str) -> str:
        return n.lower().removeprefix("qwen/").removesuffix("-2507").removesuffix("-instruct")

    wanted = short(name)
    for key in CATALOG:
        if short(key) == wanted:
            return key
    return None


def _finite(text: str) -> float:
    """A JSON number as a float, refused when it is none a config can mean (1e400)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is not a finite number")
    return value


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def load_model(ref: str) -> ModelSpec:
    """A local model directory (with config.json) or a catalog name such as Qwen2.5-Coder-7B."""
    path = Path(ref).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise UsageError(f"model directory {path} has no config.json")
        try:
            cfg = json.loads(config.read_text(encoding="utf-8"), parse_float=_finite,
                             parse_constant=_not_a_number)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {config}: {str(exc)[:200]}") from None
        except RecursionError:
            raise UsageError(f"cannot read {config}: nested too deep") from None
        resolved = str(path.resolve())
        return spec_from_config(cfg, name=path.resolve().name, source=resolved, local=True)
    key = _catalog_key(ref)
    if key is None:
        names = ", ".join(k.removeprefix("Qwen/") for k in CATALOG)
        raise UsageError(f"--model {ref!r} is neither a model directory nor a catalog name ({names})")
    return spec_from_config(CATALOG[key], name=key.split("/")[1], source=key, local=False)
