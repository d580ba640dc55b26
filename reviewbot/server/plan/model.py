"""ModelSpec: the numbers the planner needs, read from a local model directory's config.json.

No hub access: a directory path, or a name from the small built-in catalog of Qwen coder
models (their published config.json values).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewbot.errors import UsageError


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
        q_out = self.num_attention_heads * self.head_dim
        kv_out = self.num_kv_heads * self.head_dim
        attention = self.hidden_size * q_out * 2 + self.hidden_size * kv_out * 2
        if self.moe:
            mlp = self.num_experts * 3 * self.hidden_size * self.moe_intermediate_size
            mlp += self.hidden_size * self.num_experts  # router
        else:
            mlp = 3 * self.hidden_size * self.intermediate_size
        return self.num_layers * (attention + mlp)

    @property
    def param_count(self) -> int:
        return self.embedding_params + self.linear_params

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
    )


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


# Published config.json values of the Instruct checkpoints (hub id → config).
CATALOG: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-Coder-7B-Instruct": _qwen(3584, 28, 28, 4, 18_944),
    "Qwen/Qwen2.5-Coder-14B-Instruct": _qwen(5120, 48, 40, 8, 13_824),
    "Qwen/Qwen2.5-Coder-32B-Instruct": _qwen(5120, 64, 40, 8, 27_648),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": _qwen(
        2048, 48, 32, 4, 6144, arch="Qwen3MoeForCausalLM", vocab=151_936, ctx=262_144, theta=10_000_000.0,
        num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768,
    ),
}


def _catalog_key(name: str) -> str | None:
    wanted = name.lower().removeprefix("qwen/").removesuffix("-instruct")
    for key in CATALOG:
        if key.lower().removeprefix("qwen/").removesuffix("-instruct") == wanted:
            return key
    return None


def load_model(ref: str) -> ModelSpec:
    """A local model directory (with config.json) or a catalog name such as Qwen2.5-Coder-7B."""
    path = Path(ref).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise UsageError(f"model directory {path} has no config.json")
        try:
            cfg = json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {config}: {exc}") from exc
        resolved = str(path.resolve())
        return spec_from_config(cfg, name=path.resolve().name, source=resolved, local=True)
    key = _catalog_key(ref)
    if key is None:
        names = ", ".join(k.removeprefix("Qwen/") for k in CATALOG)
        raise UsageError(f"--model {ref!r} is neither a model directory nor a catalog name ({names})")
    return spec_from_config(CATALOG[key], name=key.split("/")[1], source=key, local=False)
