"""Topology and flag decisions for the planner: TP sizes, parsers, YaRN, argv/env, warnings.

Every flag emitted here is checked against the installed vLLM's parser (tests/server/plan/test_topology.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

from reviewbot_server.errors import UsageError
from reviewbot_server.plan.hardware import GpuType
from reviewbot_server.plan.memory import WeightFormat
from reviewbot_server.plan.model import PUBLISHED, ModelSpec, Quant
from reviewbot_server.plan.types import Instance, Plan
from reviewbot_server.serve_config import ServeConfig

MAX_YARN_FACTOR = 4.0  # Qwen documents YaRN up to ×4 of the native context
KV_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")


def tp_sizes(model: ModelSpec, count: int) -> list[int]:
    """TP sizes vLLM accepts: attention heads divide evenly; KV heads split or replicate."""
    sizes = []
    for tp in (1, 2, 4, 8, 16):
        kv = model.num_kv_heads
        if tp <= count and model.num_attention_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0):
            sizes.append(tp)
    return sizes


def published_suffix(model: ModelSpec, fmt: WeightFormat) -> str | None:
    """The hub suffix of the publisher's own checkpoint in this format, if there is one."""
    wanted = {"awq": "-AWQ", "gptq": f"-GPTQ-Int{fmt.bits}", "fp8": "-FP8"}.get(fmt.method or "")
    return wanted if wanted in PUBLISHED.get(model.source, ()) else None


def catalog_checkpoint(model: ModelSpec, fmt: WeightFormat) -> ModelSpec:
    """A catalog model planned at 4/8 bit or FP8 means its publisher's GPTQ/AWQ/FP8 checkpoint,
    when one exists; otherwise the plan keeps the base id (FP8: vLLM quantizes while loading;
    4/8 bit: the plan says to bring a quantized checkpoint)."""
    if model.local or model.quant is not None or fmt.method not in ("awq", "gptq", "fp8"):
        return model
    suffix = published_suffix(model, fmt)
    if suffix is None:
        return model
    return replace(model, source=model.source + suffix,
                   quant=Quant(fmt.method or "gptq", fmt.bits, fmt.group_size))


def context_limit(model: ModelSpec) -> int:
    return max(model.effective_context, int(model.native_context * MAX_YARN_FACTOR))


def check_inputs(context: int, nodes: int, kv_cache_dtype: str | None) -> None:
    """Bad input is a usage error (exit 2); what does not fit is a refusal (reviewbot_server.plan.planner)."""
    if not 1 <= nodes <= 64:
        raise UsageError(f"--nodes {nodes}: between 1 and 64")
    if context < 1024:
        raise UsageError(f"--max-model-len {context}: at least 1024 tokens for a review")
    if kv_cache_dtype is not None and kv_cache_dtype not in KV_DTYPES:
        raise UsageError(f"--kv-cache-dtype {kv_cache_dtype!r}: one of {', '.join(KV_DTYPES)}")


def tool_parser(model: ModelSpec) -> str | None:
    return {"qwen2.5": "hermes", "qwen3": "hermes", "qwen3-coder": "qwen3_coder",
            "qwen3.5": "qwen3_coder"}.get(model.family)


def reasoning(model: ModelSpec) -> str | None:
    return "qwen3" if model.family in ("qwen3", "qwen3.5") else None


def yarn_factor(model: ModelSpec, context: int) -> float | None:
    if context <= model.effective_context:
        return None
    return math.ceil(context / model.native_context * 2) / 2  # round up to a half step


def yarn_overrides(model: ModelSpec, context: int) -> str | None:
    """`--hf-overrides` replaces rope_parameters whole, so rope_theta travels with it; and
    vLLM 0.32 treats a YaRN max_position_embeddings as already scaled (it does not multiply
    by `factor`), so the scaled length is overridden too (checked in tests/server/plan/test_topology.py)."""
    factor = yarn_factor(model, context)
    if factor is None:
        return None
    rope = {"rope_type": "yarn", "factor": factor,
            "original_max_position_embeddings": model.native_context,
            "rope_theta": model.rope_theta}
    scaled = int(model.native_context * factor)
    return json.dumps({"rope_parameters": rope, "max_position_embeddings": scaled},
                      separators=(",", ":"))


def needs_expert_parallel(model: ModelSpec, fmt: WeightFormat, tp: int) -> bool:
    """Group-quantized experts split over TP must keep whole quantization groups."""
    if not model.moe or tp == 1:
        return False
    group = fmt.group_size if fmt.method in ("awq", "gptq") else 128
    blockwise = fmt.method in ("awq", "gptq") or (fmt.method == "fp8" and model.quant is not None)
    return blockwise and (model.moe_intermediate_size // tp) % group != 0


def four_bit(model: ModelSpec) -> str:
    """The 4-bit --quantization to suggest: the one its publisher ships a checkpoint in (AWQ
    first, else GPTQ-Int4); AWQ where none is published (the plan then says to bring one)."""
    published = PUBLISHED.get(model.source, ())
    return "gptq" if "-AWQ" not in published and "-GPTQ-Int4" in published else "awq"


def smaller_formats(fmt: WeightFormat, gpu: GpuType, model: ModelSpec) -> list[str]:
    if fmt.bits == 16:
        return (["fp8"] if gpu.compute_capability >= (8, 0) else []) + [four_bit(model)]
    return [four_bit(model)] if fmt.bits == 8 else []


def vllm_quantization(plan: Plan) -> str | None:
    """Marlin where the vLLM version the tests check (0.32) runs it; on Turing it does not
    (vLLM PR #29901 is not in it): the dense kernels there, and moe_wna16 for experts."""
    fmt, ckpt = plan.weights, plan.model.quant
    if fmt.method is None or (ckpt is not None and ckpt.method not in ("awq", "gptq", "fp8")):
        return None  # unquantized, or a format vLLM detects from config.json itself
    if fmt.method in ("awq", "gptq") and plan.gpu.turing:
        return "moe_wna16" if plan.model.moe else fmt.method
    return {"awq": "awq_marlin", "gptq": "gptq_marlin"}.get(fmt.method, fmt.method)


CORES_PER_API_SERVER = 4
MAX_API_SERVERS = 4


def api_servers(cpus: int | None, replicas_per_node: int) -> int:
    """vLLM API server processes per instance: one tokenizes, renders and parses every
    request of an instance, and a review's chunks and their /tokenize counts queue behind it
    (measured on an H200: bot ÷ replay 1.10-1.17 with one, 1.04-1.05 with four). One per
    CORES_PER_API_SERVER cores of the instance's share of the node, at most MAX_API_SERVERS;
    one where the cores are unknown."""
    if not cpus:
        return 1
    return max(1, min(MAX_API_SERVERS, cpus // replicas_per_node // CORES_PER_API_SERVER))


def serve_config(plan: Plan, bind: str, port: int) -> ServeConfig:
    m = plan.memory
    argv = ["--tensor-parallel-size", str(plan.tp),
            "--gpu-memory-utilization", f"{m.utilization:.2f}",
            "--max-num-seqs", str(plan.max_num_seqs),
            "--max-num-batched-tokens", str(plan.max_num_batched_tokens),
            "--kv-cache-dtype", m.kv_dtype,
            # on by default for most models, off for some hybrids: a review's chunks and
            # passes share their prompt prefix, so say it
            "--enable-prefix-caching",
            # the review side's priority_scheduling: small reviews pass large ones
            "--scheduling-policy", "priority"]
    if plan.api_servers > 1:
        argv += ["--api-server-count", str(plan.api_servers)]
    quant = vllm_quantization(plan)
    if quant:
        argv += ["--quantization", quant]
    if plan.reasoning_parser:
        argv += ["--reasoning-parser", plan.reasoning_parser]
    if plan.hf_overrides:
        argv += ["--hf-overrides", plan.hf_overrides]
    if plan.expert_parallel:
        argv.append("--enable-expert-parallel")
    if plan.pcie_tp:
        argv.append("--disable-custom-all-reduce")
    if plan.gpu.turing:
        argv += ["--attention-backend", "TRITON_ATTN"]
    if plan.model.vision_params:
        # a review sends no images: no encoder cache, no multimodal profiling
        argv += ["--limit-mm-per-prompt", json.dumps({"image": 0, "video": 0},
                                                     separators=(",", ":"))]
    return ServeConfig(model=plan.model.source, served_model_name=plan.model.name, host=bind,
                       port=port, max_model_len=plan.max_model_len, dtype=plan.dtype,
                       tool_call_parser=plan.tool_call_parser, flags=tuple(argv))


def instances(plan: Plan, base_port: int) -> tuple[Instance, ...]:
    bind = "127.0.0.1" if plan.nodes == 1 else "0.0.0.0"
    out: list[Instance] = []
    for node in range(plan.nodes):
        for r in range(plan.replicas_per_node):
            gpus = tuple(range(r * plan.tp, (r + 1) * plan.tp))
            env = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}
            if plan.model.local:
                env["HF_HUB_OFFLINE"] = "1"
            if plan.pcie_tp:
                env["NCCL_P2P_DISABLE"] = "1"
            host = "127.0.0.1" if plan.nodes == 1 else f"node{node + 1}"
            out.append(Instance(index=len(out), node=node, host=host, port=base_port + r,
                                gpus=gpus, serve=serve_config(plan, bind, base_port + r),
                                env=tuple(env.items())))
    return tuple(out)



