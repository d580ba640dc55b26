"""Warnings a plan carries: every compromise and hardware trap, with the reason."""

from __future__ import annotations

from reviewbot.server.plan import topology
from reviewbot.server.plan.types import Plan


def _hardware(plan: Plan) -> list[str]:
    gpu, out = plan.gpu, []
    if not gpu.bf16:
        out.append(f"{gpu.name} ({gpu.arch}, sm_{gpu.compute_capability[0]}"
                   f"{gpu.compute_capability[1]}) has no bf16: serving in float16 "
                   "(--dtype float16); bf16 checkpoints are cast")
    if gpu.turing:
        out.append("FlashAttention 2 and FlashInfer need sm_80+: Turing uses the Triton "
                   "attention backend (--attention-backend TRITON_ATTN)")
        out.append("Turing's 64 KiB shared memory can crash Triton kernels on the first "
                   "request (vllm#36802): run `reviewbot server check` after every start")
        if plan.weights.method in ("awq", "gptq"):
            out.append("Marlin kernels on sm_75 need a vLLM with PR #29901; on older builds "
                       "use --quantization gptq/awq (dense) or moe_wna16 (MoE)")
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
        out.append(f"planned for a {plan.weights.label} checkpoint but {m.name} is not "
                   "quantized: point --model at the AWQ/GPTQ checkpoint (vLLM cannot "
                   "quantize to 4 bit while loading)")
    if not m.local and m.quant is not None:
        out.append(f"catalog model planned as the {plan.weights.label} checkpoint {m.source}; "
                   "pass your checkpoint's directory to --model to plan from its config.json")
    if plan.memory.kv_dtype.startswith("fp8"):
        out.append("KV cache in fp8 to fit the context: half the bytes per token, a small "
                   "quality cost")
    if plan.memory.utilization > 0.9:
        out.append(f"--gpu-memory-utilization {plan.memory.utilization:.2f} leaves little "
                   "headroom: nothing else may run on these GPUs")
    if plan.reviews_per_replica == 1:
        out.append("only one full-length review fits at a time per replica; shorter "
                   "requests share the cache, longer queues wait")
    return out


def collect(plan: Plan) -> tuple[str, ...]:
    return tuple(_hardware(plan) + _topology(plan) + _model(plan))
