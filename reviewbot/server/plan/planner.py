"""The planner: GPUs + model → a frozen Plan (topology, memory, vLLM argv per instance).

Entry point (the supervisor imports it):

    plan(gpus_spec: str, model: ModelSpec, *, max_model_len=65536, quantization=None,
         kv_cache_dtype=None, nodes=1, base_port=8001) -> Plan

Raises `PlanRefused` (exit 1, carries the reason and the nearest plan that works) when the
model or the context cannot fit, and `UsageError` (exit 2) for bad input. Pure: no I/O.

Topology: the smallest tensor-parallel group whose GPUs hold the weights plus KV for one
full-length review; every other GPU group becomes another replica (one process per group,
pinned with CUDA_VISIBLE_DEVICES, behind nginx/HAProxy).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reviewbot.errors import PlanRefused
from reviewbot.server.plan import notes, topology
from reviewbot.server.plan.hardware import GpuSpec, GpuType, parse_gpus
from reviewbot.server.plan.memory import Memory, WeightFormat, gpu_memory, weight_format
from reviewbot.server.plan.model import ModelSpec
from reviewbot.server.plan.types import Plan

DEFAULT_CONTEXT = 65_536
REVIEW_CHUNK = 4_096  # a typical review request; sizes --max-num-seqs
MAX_SEQS = 256
UTILIZATIONS = (0.90, 0.95)  # 0.90 leaves room for the driver and stray processes


@dataclass(frozen=True)
class _Fit:
    tp: int
    memory: Memory


def _batched_tokens(gpu: GpuType) -> int:
    """Prefill chunk size: vLLM's defaults (2048; 8192 from 70 GiB), 4096 in between."""
    gib = gpu.memory_mib / 1024
    return 2048 if gib < 20 else 4096 if gib < 70 else 8192


def _search(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, context: int, kv_dtypes: tuple[str, ...]
) -> _Fit | None:
    """First fit in order of preference: fewer GPUs per replica, 16-bit KV, 0.90 utilization."""
    batched = _batched_tokens(gpus.gpu)
    for tp in topology.tp_sizes(model, gpus.count):
        for util in UTILIZATIONS:
            for kv in kv_dtypes:
                mem = gpu_memory(model, fmt, gpu_total=gpus.gpu.memory_bytes, tp=tp,
                                 utilization=util, kv_dtype=kv, batched_tokens=batched)
                if mem.reviews(context) >= 1:
                    return _Fit(tp, mem)
    return None


def _largest_context(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, kv_dtypes: tuple[str, ...]
) -> int:
    batched = _batched_tokens(gpus.gpu)
    best = 0
    for tp in topology.tp_sizes(model, gpus.count):
        for kv in kv_dtypes:
            mem = gpu_memory(model, fmt, gpu_total=gpus.gpu.memory_bytes, tp=tp,
                             utilization=UTILIZATIONS[0], kv_dtype=kv, batched_tokens=batched)
            best = max(best, mem.kv_tokens)
    return best // 1024 * 1024


def _kv_dtypes(gpu: GpuType, requested: str | None) -> tuple[str, ...]:
    if requested:
        return (requested,)
    return ("auto", "fp8") if gpu.fp8 else ("auto",)


@dataclass(frozen=True)
class _Ask:
    """One planning request, so that refusals can re-plan it with a change or two."""

    spec: str
    model: ModelSpec
    max_model_len: int
    quantization: str | None
    kv_cache_dtype: str | None
    nodes: int
    base_port: int

    def nearest(self, **changes: int | str | None) -> Plan | None:
        again = replace(self, **changes)  # type: ignore[arg-type]
        try:
            return plan(again.spec, again.model, max_model_len=again.max_model_len,
                        quantization=again.quantization, kv_cache_dtype=again.kv_cache_dtype,
                        nodes=again.nodes, base_port=again.base_port)
        except PlanRefused as refused:
            nearest: Plan | None = refused.nearest
            return nearest


def plan(
    gpus_spec: str,
    model: ModelSpec,
    *,
    max_model_len: int = DEFAULT_CONTEXT,
    quantization: str | None = None,
    kv_cache_dtype: str | None = None,
    nodes: int = 1,
    base_port: int = 8001,
) -> Plan:
    gpus = parse_gpus(gpus_spec)
    fmt = weight_format(model, quantization)
    ask = _Ask(gpus_spec, model, max_model_len, quantization, kv_cache_dtype, nodes, base_port)
    model = topology.catalog_checkpoint(model, fmt)
    topology.check_inputs(max_model_len, nodes, kv_cache_dtype)
    limit = topology.context_limit(model)
    if max_model_len > limit:
        raise PlanRefused(
            f"{max_model_len:,} tokens exceed {model.name}'s native context "
            f"{model.native_context:,} × YaRN {topology.MAX_YARN_FACTOR:g} = {limit:,}",
            ask.nearest(max_model_len=limit), (f"--max-model-len {limit}",))
    if fmt.method == "fp8" and gpus.gpu.compute_capability < (8, 0):
        raise PlanRefused(f"{gpus.gpu.name} (sm_75) has no FP8 weight kernels in vLLM",
                          ask.nearest(quantization="awq"),
                          ("--quantization awq (an AWQ 4-bit checkpoint)",))
    kv_dtypes = _kv_dtypes(gpus.gpu, kv_cache_dtype)
    fit = _search(gpus, model, fmt, max_model_len, kv_dtypes)
    if fit is None:
        raise _refusal(ask, gpus, model, fmt, kv_dtypes)
    return _build(gpus, model, fmt, fit, max_model_len, nodes, base_port)


def _build(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, fit: _Fit, context: int, nodes: int,
    base_port: int,
) -> Plan:
    mem = fit.memory
    reviews = mem.reviews(context)
    seqs = min(MAX_SEQS, max(reviews, mem.kv_tokens // REVIEW_CHUNK))
    seqs = seqs // 8 * 8 if seqs >= 8 else seqs
    batched = max(_batched_tokens(gpus.gpu), seqs)
    draft = Plan(
        gpus=gpus, nodes=nodes, model=model, weights=fmt, tp=fit.tp,
        replicas_per_node=gpus.count // fit.tp, memory=mem, max_model_len=context,
        max_num_seqs=seqs, max_num_batched_tokens=batched,
        dtype="float16" if not gpus.gpu.bf16 else "bfloat16",
        tool_call_parser=topology.tool_parser(model), reasoning_parser=topology.reasoning(model),
        hf_overrides=topology.yarn_overrides(model, context),
        expert_parallel=topology.needs_expert_parallel(model, fmt, fit.tp),
        pcie_tp=fit.tp > 1 and gpus.gpu.interconnect == "PCIe",
        instances=(), warnings=(),
    )
    return replace(draft, instances=topology.instances(draft, base_port),
                   warnings=notes.collect(draft))


def _refusal(
    ask: _Ask, gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, kv_dtypes: tuple[str, ...]
) -> PlanRefused:
    """Explain why nothing fits, and find the nearest plan: shorter context or smaller weights."""
    context, where = ask.max_model_len, f"{gpus.count}x{gpus.gpu.name}"
    largest = _largest_context(gpus, model, fmt, kv_dtypes)
    alternatives: list[str] = []
    nearest: Plan | None = None
    if largest >= REVIEW_CHUNK:
        reason = (f"a {context:,}-token context does not fit {model.name} ({fmt.label}) on "
                  f"{where}: the largest context that fits is {largest:,} tokens")
        nearest = ask.nearest(max_model_len=largest, quantization=_quant_arg(fmt))
        alternatives.append(f"--max-model-len {largest}")
    else:
        spread = f" even with TP across all {gpus.count} GPUs" if gpus.count > 1 else ""
        reason = (f"{model.name} ({fmt.label}) does not fit {where}{spread} with room for "
                  f"one {context:,}-token review")
    reduced: Plan | None = None
    for quant in topology.smaller_formats(fmt, gpus.gpu):
        smaller = weight_format(model, quant)
        fit = _search(gpus, model, smaller, context, kv_dtypes)
        if fit is not None:
            checkpoint = topology.catalog_checkpoint(model, smaller)
            alt = _build(gpus, checkpoint, smaller, fit, context, ask.nodes, ask.base_port)
            alternatives.append(f"--quantization {quant} (checkpoint: {smaller.label}): "
                                f"TP={alt.tp}, {alt.max_concurrent_reviews} review(s) at once")
            nearest = nearest or alt
            break
        ctx = _largest_context(gpus, model, smaller, kv_dtypes)
        if reduced is None and ctx >= REVIEW_CHUNK:
            reduced = ask.nearest(max_model_len=ctx, quantization=quant)
            alternatives.append(f"--quantization {quant} --max-model-len {ctx} "
                                f"(checkpoint: {smaller.label})")
    nearest = nearest or reduced
    if "fp8" not in kv_dtypes and gpus.gpu.compute_capability >= (8, 0):
        alternatives.append("--kv-cache-dtype fp8 (halves the KV cache; no native FP8 here)")
    return PlanRefused(reason, nearest, tuple(alternatives))


def _quant_arg(fmt: WeightFormat) -> str:
    if fmt.method is None:
        return "bf16"
    return fmt.method if fmt.method == "fp8" else f"{fmt.method}-int{fmt.bits}"
