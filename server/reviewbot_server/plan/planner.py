"""The planner: GPUs + model → a frozen Plan (topology, memory, vLLM argv per instance).

Entry point (the supervisor imports it):

    plan(gpus_spec: str, model: ModelSpec, *, max_model_len=65536, quantization=None,
         kv_cache_dtype=None, nodes=1, base_port=8001, tensor_parallel_size=None,
         replicas=None) -> Plan

Raises `PlanRefused` (exit 1, carries the reason and the nearest plan that works: a shorter
context, smaller weights, or more GPUs) when the model or the context cannot fit, and
`UsageError` (exit 2) for bad input. Pure: no I/O.

Topology: the smallest tensor-parallel group whose GPUs hold the weights plus KV for one
full-length review; every other GPU group becomes another replica (one process per group,
pinned with CUDA_VISIBLE_DEVICES, behind nginx/HAProxy). `tensor_parallel_size` and
`replicas` override that choice; the plan then says what it would have chosen.

Serving flags are shaped for reviews, which are prefill-heavy: the prefill chunk
(`--max-num-batched-tokens`) is vLLM's default for the card, raised while its activations fit
under the sampler's profiling peak (free of KV cost), and raised again to 32K or 16K where that
costs at most 5% of the KV cache: on the H200, 32K took a 1 MB review from 21.1 to 19.4 s
(whole reviews overlap prefill with decode, which the prefill rate alone did not show) for
3.5% fewer KV tokens (docs/performance.md). Prefix caching stays on for the chunks and passes
of one review that share a prompt prefix.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace

from reviewbot_server.errors import PlanRefused, UsageError
from reviewbot_server.plan import notes, topology
from reviewbot_server.plan.hardware import GpuSpec, GpuType, parse_gpus
from reviewbot_server.plan.memory import (
    SAMPLER_BASE,
    SAMPLER_PER_LOGIT,
    Memory,
    WeightFormat,
    forward_bytes_per_token,
    gpu_memory,
    weight_format,
)
from reviewbot_server.plan.model import PUBLISHED, ModelSpec
from reviewbot_server.plan.types import Compared, Plan

DEFAULT_CONTEXT = 65_536
REVIEW_CHUNK = 4_096  # a typical review request; sizes --max-num-seqs
MAX_SEQS = 256
BATCHED = (16_384, 8_192, 4_096, 2_048)  # prefill chunk candidates, largest first
# a larger prefill chunk where it costs little KV cache: on the H200 32K cost 3.5% of it and
# took 1.7-2.4 s off a 1 MB review at 24K units (16.9 against 19.4 s single-pass, 19.4 against
# 21.1 s verified; docs/performance.md)
RAISED = (32_768, 16_384)
KV_COST = 0.05
UTILIZATIONS = (0.90, 0.95)  # 0.90 leaves room for the driver and stray processes


@dataclass(frozen=True)
class _Fit:
    tp: int
    memory: Memory
    batched: int
    seqs: int


def batched_tokens(gpu: GpuType, model: ModelSpec, tp: int, seqs: int) -> int:
    """vLLM's own default for the card (8,192 from 70 GiB; 2,048 / 4,096 below), raised to
    the largest chunk whose forward activations stay under the sampler's dummy-run peak:
    vLLM reserves the larger of the two, so that raise costs no KV cache."""
    floor = 2048 if gpu.memory_mib < 20 * 1024 else 4096 if gpu.memory_mib < 70 * 1024 else 8192
    sampler = SAMPLER_BASE + seqs * model.vocab_size * SAMPLER_PER_LOGIT
    per_token = forward_bytes_per_token(model, tp)
    free = next((b for b in BATCHED if b * per_token <= sampler), BATCHED[-1])
    return max(floor, free)


def _memory(gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, tp: int, util: float,
            kv: str, seqs: int = MAX_SEQS) -> tuple[Memory, int]:
    """The memory at the free prefill chunk, or at a larger one (RAISED) that costs at most
    KV_COST of the KV cache."""

    def at(batched: int) -> Memory:
        return gpu_memory(model, fmt, gpu_total=gpus.gpu.memory_bytes, tp=tp,
                          utilization=util, kv_dtype=kv, batched_tokens=batched,
                          max_num_seqs=seqs)

    free = batched_tokens(gpus.gpu, model, tp, seqs)
    mem = at(free)
    for larger in (b for b in RAISED if b > free):
        bigger = at(larger)
        if bigger.kv_tokens >= (1 - KV_COST) * mem.kv_tokens:
            return bigger, larger
    return mem, free


def _tp_choices(model: ModelSpec, count: int, forced: int | None) -> list[int]:
    sizes = topology.tp_sizes(model, count)
    if forced is None:
        return sizes
    if forced not in sizes:
        raise UsageError(
            f"--tensor-parallel-size {forced} does not work for {model.name} on {count} GPU(s):"
            f" vLLM needs {model.num_attention_heads} attention heads split evenly and "
            f"{model.num_kv_heads} KV heads split or replicated; possible: "
            f"{', '.join(map(str, sizes))}")
    return [forced]


def _search(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, context: int, kv_dtypes: tuple[str, ...],
    forced_tp: int | None = None,
) -> _Fit | None:
    """First fit in order of preference: fewer GPUs per replica, 16-bit KV, 0.90 utilization.
    Then --max-num-seqs is sized from the KV cache (fewer sequences reserve less memory)."""
    for tp in _tp_choices(model, gpus.count, forced_tp):
        for util in UTILIZATIONS:
            for kv in kv_dtypes:
                mem, _ = _memory(gpus, model, fmt, tp, util, kv)
                if mem.reviews(context) >= 1:
                    seqs = min(MAX_SEQS, max(mem.reviews(context), mem.kv_tokens // REVIEW_CHUNK))
                    seqs = seqs // 8 * 8 if seqs >= 8 else seqs
                    mem, batched = _memory(gpus, model, fmt, tp, util, kv, seqs)
                    return _Fit(tp, mem, max(batched, seqs), seqs)
    return None


def _largest_context(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, kv_dtypes: tuple[str, ...],
    forced_tp: int | None = None,
) -> int:
    best = 0
    for tp in _tp_choices(model, gpus.count, forced_tp):
        for kv in kv_dtypes:
            mem, _ = _memory(gpus, model, fmt, tp, UTILIZATIONS[0], kv)
            if mem.kv > mem.state_per_sequence:
                best = max(best, (mem.kv - mem.state_per_sequence) // mem.kv_per_token)
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
    tensor_parallel_size: int | None = None
    replicas: int | None = None

    def again(self, **changes: int | str | None) -> Plan:
        return _plan(replace(self, **changes))  # type: ignore[arg-type]

    def attempt(self, **changes: int | str | None) -> Plan | None:
        try:
            return self.again(**changes)
        except PlanRefused:
            return None

    def nearest(self, **changes: int | str | None) -> Plan | None:
        try:
            return self.again(**changes)
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
    tensor_parallel_size: int | None = None,
    replicas: int | None = None,
    cpus: int | None = None,
) -> Plan:
    """The deployment for these GPUs and this model. Where the card computes FP8 and the
    model's publisher has an FP8 build, FP8 weights with an fp8 KV cache are weighed against
    16-bit ones: the plan takes FP8 (measured on an H200: a KV cache 2.9 times larger, a
    verified review 20% faster) unless the user chose the weights or the KV cache, and shows
    the other one's numbers. `cpus`, the cores of each node, sizes vLLM's API servers."""
    ask = _Ask(gpus_spec, model, max_model_len, quantization, kv_cache_dtype, nodes, base_port,
               tensor_parallel_size, replicas)
    chosen = _weighed(ask)
    frontends = replace(chosen, api_servers=topology.api_servers(cpus, chosen.replicas_per_node))
    return replace(frontends, instances=topology.instances(frontends, base_port))


def _weighed(ask: _Ask) -> Plan:
    """The plan, FP8 weighed against 16-bit weights where both apply (`plan`)."""
    if not _weighs_fp8(ask):
        return _plan(ask)
    sixteen = ask.attempt(quantization="bf16")
    fp8 = ask.attempt(quantization="fp8", kv_cache_dtype="fp8")
    chosen, other = ((fp8, sixteen) if ask.quantization is None and fp8 is not None
                     else (sixteen, fp8))
    if chosen is None:
        return _plan(ask)  # refused, with the alternatives
    if other is None:
        return chosen
    flags = "--quantization fp8 --kv-cache-dtype fp8" if other is fp8 else "--quantization bf16"
    return replace(chosen, compared=Compared(
        f"{other.weights.label} weights, {other.memory.kv_dtype} KV cache",
        other.memory.kv_tokens, other.max_concurrent_reviews, flags))


_SIXTEEN_BITS = ("bf16", "bfloat16", "fp16", "float16")


def _weighs_fp8(ask: _Ask) -> bool:
    """A 16-bit catalog model with a published FP8 build, on a card with FP8 tensor cores, and
    no KV cache dtype or weights other than 16-bit asked for."""
    model = ask.model
    return (parse_gpus(ask.spec).gpu.fp8 and ask.kv_cache_dtype is None
            and (ask.quantization is None or ask.quantization.lower() in _SIXTEEN_BITS)
            and model.quant is None and not model.local
            and "-FP8" in PUBLISHED.get(model.source, ()))


def _plan(ask: _Ask) -> Plan:
    gpus = parse_gpus(ask.spec)
    fmt = weight_format(ask.model, ask.quantization)
    model = topology.catalog_checkpoint(ask.model, fmt)
    topology.check_inputs(ask.max_model_len, ask.nodes, ask.kv_cache_dtype)
    limit = topology.context_limit(model)
    if ask.max_model_len > limit:
        raise PlanRefused(
            f"{ask.max_model_len:,} tokens exceed {model.name}'s native context "
            f"{model.native_context:,} × YaRN {topology.MAX_YARN_FACTOR:g} = {limit:,}",
            ask.nearest(max_model_len=limit), (f"--max-model-len {limit}",))
    if fmt.method == "fp8" and gpus.gpu.compute_capability < (8, 0):
        raise PlanRefused(f"{gpus.gpu.name} (sm_75) has no FP8 weight kernels in vLLM",
                          ask.nearest(quantization=topology.four_bit(ask.model)),
                          (f"--quantization {topology.four_bit(ask.model)} (a 4-bit checkpoint)",))
    kv_dtypes = _kv_dtypes(gpus.gpu, ask.kv_cache_dtype)
    fit = _search(gpus, model, fmt, ask.max_model_len, kv_dtypes, ask.tensor_parallel_size)
    if fit is None:
        raise _refusal(ask, gpus, model, fmt, kv_dtypes)
    per_node = _replicas(gpus, fit.tp, ask.replicas)
    built = _build(gpus, model, fmt, fit, ask.max_model_len, ask.nodes, ask.base_port, per_node)
    if ask.tensor_parallel_size is None and ask.replicas is None:
        return built
    return replace(built, warnings=built.warnings + (_would_have(ask, built),))


def _replicas(gpus: GpuSpec, tp: int, wanted: int | None) -> int:
    room = gpus.count // tp
    if wanted is not None and not 1 <= wanted <= room:
        raise UsageError(f"--replicas {wanted}: {gpus.count} GPU(s) at TP={tp} hold 1 to "
                         f"{room} replica(s)")
    return room if wanted is None else wanted


def _would_have(ask: _Ask, asked: Plan) -> str:
    """What the planner would have chosen without the overrides, and why."""
    try:
        auto = ask.again(tensor_parallel_size=None, replicas=None)
    except PlanRefused:
        return "without the overrides nothing fits either"
    if (auto.tp, auto.replicas_per_node) == (asked.tp, asked.replicas_per_node):
        return f"TP={asked.tp} × {asked.replicas_per_node} replica(s) is also what the planner chooses"
    why = (f"it takes the fewest GPUs per replica that hold the weights and one "
           f"{asked.max_model_len:,}-token review: TP={auto.tp}, with less all-reduce traffic "
           "per token, and every other group of as many GPUs a replica of its own, one failure "
           "domain each")
    return (f"as asked: TP={asked.tp} × {asked.replicas_per_node} replica(s), "
            f"{asked.max_concurrent_reviews} review(s) at once; the planner would choose "
            f"TP={auto.tp} × {auto.replicas_per_node} replica(s), "
            f"{auto.max_concurrent_reviews} review(s) at once ({why})")


def _build(
    gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat, fit: _Fit, context: int, nodes: int,
    base_port: int, per_node: int | None = None,
) -> Plan:
    mem = fit.memory
    draft = Plan(
        gpus=gpus, nodes=nodes, model=model, weights=fmt, tp=fit.tp,
        replicas_per_node=per_node or gpus.count // fit.tp, memory=mem, max_model_len=context,
        max_num_seqs=fit.seqs, max_num_batched_tokens=fit.batched,
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
    largest = _largest_context(gpus, model, fmt, kv_dtypes, ask.tensor_parallel_size)
    alternatives: list[tuple[dict[str, int | str | None], str]] = []  # (re-plan with, text)
    nearest: Plan | None = None
    if largest >= REVIEW_CHUNK:
        reason = (f"a {context:,}-token context does not fit {model.name} ({fmt.label}) on "
                  f"{where}: the largest context that fits is {largest:,} tokens")
        nearest = ask.nearest(max_model_len=largest, quantization=_quant_arg(fmt))
        alternatives.append(({"max_model_len": largest}, f"--max-model-len {largest}"))
    else:
        spread = f" even with TP across all {gpus.count} GPUs" if gpus.count > 1 else ""
        reason = (f"{model.name} ({fmt.label}) does not fit {where}{spread} with room for "
                  f"one {context:,}-token review")
    reduced: Plan | None = None
    for quant in topology.smaller_formats(fmt, gpus.gpu, model):
        smaller = weight_format(model, quant)
        fit = _search(gpus, model, smaller, context, kv_dtypes, ask.tensor_parallel_size)
        if fit is not None:
            checkpoint = topology.catalog_checkpoint(model, smaller)
            alt = _build(gpus, checkpoint, smaller, fit, context, ask.nodes, ask.base_port)
            alternatives.append(({"quantization": quant},
                                 (f"--quantization {quant} (checkpoint: {smaller.label}): "
                                 f"TP={alt.tp}, {alt.max_concurrent_reviews} review(s) at once")))
            nearest = nearest or alt
            break
        ctx = _largest_context(gpus, model, smaller, kv_dtypes, ask.tensor_parallel_size)
        if reduced is None and ctx >= REVIEW_CHUNK:
            reduced = ask.nearest(max_model_len=ctx, quantization=quant)
            alternatives.append(({"quantization": quant, "max_model_len": ctx},
                                 (f"--quantization {quant} --max-model-len {ctx} "
                                 f"(checkpoint: {smaller.label})")))
    nearest = nearest or reduced
    if "fp8" not in kv_dtypes and gpus.gpu.compute_capability >= (8, 0):
        alternatives.append(({"kv_cache_dtype": "fp8"},
                             "--kv-cache-dtype fp8 (halves the KV cache; no native FP8 here)"))
    more = _more_gpus(ask, gpus, model, fmt, kv_dtypes)
    if more is not None:
        quant_flag = None if more.weights == fmt else _quant_arg(more.weights)
        alternatives.append(({"spec": more.gpus.spec, "quantization": quant_flag or ask.quantization},
                             f"--gpus {more.gpus.spec}"
                             + (f" --quantization {quant_flag}" if quant_flag else "")
                             + f": TP={more.tp}, {more.max_concurrent_reviews} review(s) at once"))
        nearest = nearest or more
    if _CHECKING.get():  # inside a check of another refusal's alternatives: only pass/fail counts
        return PlanRefused(reason, nearest, ())
    shown = tuple(text for changes, text in alternatives if _accepted(ask, changes))
    if not any("--gpus" not in text for text in shown):  # nothing with these cards and model
        shown += _models_that_fit(ask)
    return PlanRefused(reason, nearest, shown)


# set while alternatives are re-planned, so that a refusal inside does not check its own
_CHECKING: ContextVar[bool] = ContextVar("checking_alternatives", default=False)


def _accepted(ask: _Ask, changes: dict[str, int | str | None]) -> bool:
    """Whether the planner itself accepts this alternative: only those are suggested."""
    token = _CHECKING.set(True)
    try:
        ask.again(**changes)
        return True
    except (PlanRefused, UsageError):
        return False
    finally:
        _CHECKING.reset(token)


def _models_that_fit(ask: _Ask) -> tuple[str, ...]:
    """The largest catalog model that these cards serve as asked, when the requested one
    cannot be served on them at all."""
    from reviewbot_server.plan.model import CATALOG, load_model

    fits = []
    for key in CATALOG:
        candidate = load_model(key.split("/")[1])
        if candidate.name == ask.model.name:
            continue
        token = _CHECKING.set(True)
        try:
            p = replace(ask, model=candidate, quantization=None).again()
        except (PlanRefused, UsageError):
            continue
        finally:
            _CHECKING.reset(token)
        text = (f"--model {candidate.name}: {p.weights.label} weights, TP={p.tp}, "
                f"{p.max_concurrent_reviews} review(s) at once")
        fits.append((candidate.param_count, text))
    return tuple(text for _, text in sorted(fits, reverse=True)[:1])


def _more_gpus(ask: _Ask, gpus: GpuSpec, model: ModelSpec, fmt: WeightFormat,
               kv_dtypes: tuple[str, ...]) -> Plan | None:
    """The fewest cards of this type (one machine, up to 16) that hold the model: in its own
    format first, then in each smaller one."""
    if gpus.mixed:
        return None
    formats = [fmt] + [weight_format(model, q)
                       for q in topology.smaller_formats(fmt, gpus.gpu, model)]
    for count in (2, 4, 8, 16):
        if count <= gpus.count:
            continue
        more = parse_gpus(f"{count}x{gpus.gpu.name}")
        for f in formats:
            fit = _search(more, model, f, ask.max_model_len, kv_dtypes)
            if fit is not None:
                return _build(more, topology.catalog_checkpoint(model, f), f, fit,
                              ask.max_model_len, ask.nodes, ask.base_port)
    return None


def _quant_arg(fmt: WeightFormat) -> str:
    if fmt.method is None:
        return "bf16"
    return fmt.method if fmt.method == "fp8" else f"{fmt.method}-int{fmt.bits}"
