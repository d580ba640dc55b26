"""Warnings a plan carries: every compromise and hardware trap, with the reason."""

from __future__ import annotations

from reviewbot_server.plan import topology
from reviewbot_server.plan.types import Plan


def _hardware(plan: Plan) -> list[str]:
    gpu, out = plan.gpu, []
    if not gpu.bf16:
        out.append(f"{gpu.name} ({gpu.arch}, sm_{gpu.compute_capability[0]}"
                   f"{gpu.compute_capability[1]}) has no bf16: serving in float16 "
                   "(--dtype float16)")
        if plan.model.torch_dtype == "bfloat16" and plan.weights.method is None:
            out.append(f"{plan.model.name} was trained in bfloat16: in float16 any activation "
                       "beyond 65,504 overflows to inf and the answers turn to NaN, garbage or "
                       "nothing; run `reviewbot server check` and `reviewbot eval run` after "
                       "the first start, and prefer a GPTQ/AWQ checkpoint (calibrated in fp16) "
                       "or a card with bf16 if they fail")
    if gpu.turing:
        out.append("FlashAttention 2 and FlashInfer need sm_80+: Turing uses the Triton "
                   "attention backend (--attention-backend TRITON_ATTN)")
        out.append("Turing's 64 KiB shared memory can crash Triton kernels on the first "
                   "request (vllm#36802): run `reviewbot server check` after every start")
        if plan.weights.method in ("awq", "gptq"):
            out.append(f"--quantization {topology.vllm_quantization(plan)}: what runs on sm_75 "
                       "in vLLM 0.32; the faster Marlin kernels (awq_marlin/gptq_marlin) need a "
                       "vLLM with PR #29901")
    if plan.weights.method == "fp8" and not gpu.fp8:
        out.append(f"{gpu.name} has no native FP8: fp8 weights run as weight-only Marlin "
                   "(saves memory, no speed-up)")
    if plan.memory.kv_dtype.startswith("fp8") and not gpu.fp8:
        out.append(f"fp8 KV cache on {gpu.name} (no native FP8): check that your vLLM's "
                   "attention backend supports it on this card")
    if plan.gpus.mixed:
        out.append(f"mixed GPU types ({plan.gpus.spec}): planned as if every card were a "
                   f"{gpu.name}, the smallest; TP never spans different card types")
    return out


def _topology(plan: Plan) -> list[str]:
    out = []
    if plan.pcie_tp:
        out.append(f"TP={plan.tp} over PCIe: NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce "
                   "avoid the known NCCL hangs (vllm#14449, #5484, #8058); drop them only "
                   "after NCCL tests pass on this box")
    if plan.expert_parallel:
        m = plan.model
        out.append(f"--enable-expert-parallel: moe_intermediate_size {m.moe_intermediate_size}"
                   f"/TP {plan.tp} = {m.moe_intermediate_size // plan.tp} is not a multiple "
                   "of the quantization group size")
    unused = plan.gpus.count - plan.tp * plan.replicas_per_node
    if unused:
        out.append(f"{unused} GPU(s) per machine stay unused: TP={plan.tp} groups do not "
                   "divide them")
    if plan.nodes > 1:
        out.append(f"hosts node1..node{plan.nodes} are placeholders for your machines; vLLM "
                   "binds 0.0.0.0 there: firewall its ports to the load balancer and set "
                   "VLLM_API_KEY in /etc/reviewbot/vllm.env")
    return out


def _model(plan: Plan) -> list[str]:
    out, m = [], plan.model
    factor = topology.yarn_factor(m, plan.max_model_len)
    if factor:
        out.append(f"{plan.max_model_len:,} tokens exceed {m.name}'s native "
                   f"{m.native_context:,}: static YaRN factor {factor} via --hf-overrides; "
                   "it applies to every request and may cost a little quality on short ones")
    if plan.tool_call_parser is None:
        out.append(f"no known tool-call parser for {m.architecture}: add "
                   "--enable-auto-tool-choice --tool-call-parser NAME yourself")
    if plan.weights.method in ("awq", "gptq") and m.quant is None:
        out.append(f"planned for a {plan.weights.label} checkpoint, but {m.source} has no "
                   f"published {plan.weights.label} checkpoint and is not quantized: bring "
                   "your own (a directory with its config.json) and pass it to --model; vLLM "
                   "cannot quantize to 4 bit while loading")
    if not m.local and m.quant is not None:
        out.append(f"catalog model planned as the {plan.weights.label} checkpoint {m.source}; "
                   "pass your checkpoint's directory to --model to plan from its config.json")
    if plan.memory.kv_dtype.startswith("fp8"):
        out.append("KV cache in fp8: half the bytes per token (twice the tokens in the same "
                   "memory), a small quality cost")
    if plan.memory.utilization > 0.9:
        out.append(f"--gpu-memory-utilization {plan.memory.utilization:.2f} leaves little "
                   "headroom: nothing else may run on these GPUs")
    if m.linear_layers or m.sliding_layers:
        kinds = [f"{m.kv_layers} full-attention"]
        if m.sliding_layers:
            kinds.append(f"{m.sliding_layers} sliding-window ({m.sliding_window} tokens)")
        if m.linear_layers:
            kinds.append(f"{m.linear_layers} linear-attention")
        out.append(f"hybrid attention: {', '.join(kinds)} of {m.num_layers} layers; only the "
                   "full-attention layers' cache grows with the review, the others hold "
                   f"{plan.memory.state_per_sequence / 2**20:.1f} MiB per sequence per GPU")
    if m.vision_params:
        out.append(f"the vision tower ({m.vision_params / 1e9:.2f} B params) is loaded and "
                   "counted, but no image is ever sent: --limit-mm-per-prompt sets images "
                   "and videos to 0")
    if plan.reviews_per_replica == 1:
        out.append("only one full-length review fits at a time per replica; shorter "
                   "requests share the cache, longer queues wait")
    return out


def collect(plan: Plan) -> tuple[str, ...]:
    return tuple(_hardware(plan) + _topology(plan) + _model(plan))
