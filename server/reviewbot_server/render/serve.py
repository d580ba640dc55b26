"""Plan → what people and machines read: text, JSON, systemd units, Helm values.

Load-balancer configs (nginx, HAProxy) live in server/reviewbot_server/render/balancers.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePosixPath
from typing import Any

from reviewbot_server.plan.hardware import GIB
from reviewbot_server.plan.model import ModelSpec
from reviewbot_server.plan.types import Plan
from reviewbot_server.render.configs import render
from reviewbot_server.render.names import AFFINITY_HEADER

VLLM_BIN = "/opt/vllm/bin/vllm"
ENV_FILE = "/etc/reviewbot/vllm.env"


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"


def plan_json(plan: Plan) -> dict[str, Any]:
    m = plan.memory
    return {
        "instances": [
            {"gpus": list(i.gpus), "host": i.host, "port": i.port, "node": i.node,
             "argv": list(i.argv), "env": dict(i.env)}
            for i in plan.instances
        ],
        "memory": {
            "gpu": plan.gpu.name,
            "gpu_total_bytes": m.gpu_total,
            "gpu_memory_utilization": m.utilization,
            "budget_bytes": m.budget,
            "weights_total_bytes": m.weights * plan.tp,
            "weights_per_gpu_bytes": m.weights,
            "reserve_per_gpu_bytes": m.reserve,
            "kv_cache_per_gpu_bytes": m.kv,
            "kv_bytes_per_token_per_gpu": m.kv_per_token,
            "kv_cache_dtype": m.kv_dtype,
            "kv_tokens_per_replica": m.kv_tokens,
            "param_count": plan.model.param_count,
            "weights_format": plan.weights.label,
        },
        "tensor_parallel_size": plan.tp,
        "replicas": plan.replicas_per_node * plan.nodes,
        "max_model_len": plan.max_model_len,
        "max_num_seqs": plan.max_num_seqs,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
        "max_concurrent_reviews": plan.max_concurrent_reviews,
        "compared": None if plan.compared is None else {
            "weights": plan.compared.weights, "kv_tokens_per_replica": plan.compared.kv_tokens,
            "max_concurrent_reviews": plan.compared.reviews, "flags": plan.compared.flags},
        "tool_call_parser": plan.tool_call_parser,
        "reasoning_parser": plan.reasoning_parser,
        "warnings": list(plan.warnings),
    }


def _compared_text(plan: Plan) -> list[str]:
    other = plan.compared
    if other is None:
        return []
    return ["", (f"Weighed against {other.weights}: {other.kv_tokens:,} KV tokens per replica, "
                 f"{other.reviews} review(s) at once in all ({other.flags} to choose it)")]


def plan_text(plan: Plan) -> str:
    m, model, gpu = plan.memory, plan.model, plan.gpu
    heads = max(1, model.num_kv_heads // plan.tp)
    kv_bytes = 1 if m.kv_dtype.startswith("fp8") else 2
    where = f"{plan.gpus.count}x{gpu.name}" + (f" on each of {plan.nodes} machines"
                                                 if plan.nodes > 1 else "")
    lines = [
        (f"Plan: {model.name} on {where} ({gpu.arch}, {gpu.memory_mib / 1024:.1f} GiB, "
        f"{gpu.interconnect})"),
        "",
        f"Topology: TP={plan.tp} per replica, {plan.replicas_per_node} replica(s) per machine"
        + ("" if plan.tp == 1 else f" (the weights need {plan.tp} GPUs)")
        + ("" if plan.replicas_per_node * plan.nodes == 1 else
           "; one process per replica behind nginx/HAProxy (--output nginx|haproxy)"),
        "",
        "Memory per GPU:",
        f"  total                {_gib(m.gpu_total)}",
        f"  × utilization {m.utilization:.2f}  = {_gib(m.budget)} for vLLM",
        (f"  − weights            {_gib(m.weights)}  ({model.param_count / 1e9:.2f} B params, "
        f"{plan.weights.label}, ÷ TP {plan.tp})"),
        (f"  − reserve            {_gib(m.reserve)}  (CUDA graphs, NCCL, activations of a "
        f"{plan.max_num_batched_tokens}-token prefill chunk, sampler logits)"),
        f"  = KV cache           {_gib(m.kv)}",
        (f"KV per token per GPU = 2 × {model.kv_layers} {_kv_layer_label(model)} × {heads} KV heads × "
        f"{model.head_dim} head_dim × {kv_bytes} B = {m.kv_per_token:,} B "
        f"({m.kv_per_token / 1024:.0f} KiB)"),
        (f"KV tokens per replica = {m.kv_tokens:,}  →  {plan.reviews_per_replica} review(s) of "
        f"{plan.max_model_len:,} tokens at once per replica, {plan.max_concurrent_reviews} in all"),
        *_compared_text(plan),
        "",
        "vLLM settings:",
        f"  --max-model-len {plan.max_model_len}  (the review budget)",
        f"  --max-num-seqs {plan.max_num_seqs}  (≈ KV tokens / {4096}-token review chunks)",
        f"  --max-num-batched-tokens {plan.max_num_batched_tokens}  (prefill chunk size)",
        "  --scheduling-policy priority  (set REVIEWBOT_PRIORITY_SCHEDULING=1 where reviews run)",
        *([f"  --api-server-count {plan.api_servers}  (request processes: 1 per 4 cores)"]
          if plan.api_servers > 1 else []),
        f"  --kv-cache-dtype {m.kv_dtype}   --dtype {plan.dtype}",
        f"  tool-call parser: {plan.tool_call_parser or 'none'}"
        + (f", reasoning parser: {plan.reasoning_parser}" if plan.reasoning_parser else ""),
        "",
        "Instances:",
    ]
    for inst in plan.instances:
        env = " ".join(f"{k}={v}" for k, v in inst.env)
        lines.append(f"  [{inst.index}] {inst.host}:{inst.port} GPUs {list(inst.gpus)}")
        lines.append(f"      {env} {shlex.join(inst.argv)}")
    if plan.warnings:
        lines += ["", "Warnings:"] + [f"  - {w}" for w in plan.warnings]
    return "\n".join(lines) + "\n"


def systemd_units(plan: Plan, vllm_bin: str = VLLM_BIN, user: str = "vllm") -> dict[str, str]:
    """One unit per instance of machine 1 (install the same units on every machine)."""
    return {f"reviewbot-vllm-{inst.port}.service": render(
                "vllm.service.j2", model=plan.model.name, gpus=inst.gpus, user=user,
                env=inst.env, env_file=ENV_FILE, argv=(vllm_bin, *inst.argv[1:]))
            for inst in plan.instances if inst.node == 0}


def systemd_text(plan: Plan, vllm_bin: str = VLLM_BIN) -> str:
    header = (f"# {len(plan.instances) // plan.nodes} unit(s) for /etc/systemd/system/"
              + (f"; install the same units on each of the {plan.nodes} machines"
                 if plan.nodes > 1 else "") + "\n")
    parts = [f"# --- {name} ---\n{body}" for name, body in systemd_units(plan, vllm_bin).items()]
    return header + "\n".join(parts)


def helm_values(plan: Plan) -> str:
    """vllm-project/production-stack values (Helm chart vllm/vllm-stack) for the same engine."""
    argv = plan.instances[0].argv
    keep = {"--tensor-parallel-size", "--max-model-len", "--dtype", "--gpu-memory-utilization",
            "--host", "--port", "--served-model-name"}
    extra: list[str] = []
    i = 3
    while i < len(argv):
        flag, has_value = argv[i], i + 1 < len(argv) and not argv[i + 1].startswith("--")
        if flag not in keep:
            extra.append(f"{flag}={argv[i + 1]}" if has_value else flag)
        i += 2 if has_value else 1
    env = [{"name": k, "value": v} for k, v in plan.instances[0].env if k != "CUDA_VISIBLE_DEVICES"]
    j = json.dumps  # JSON scalars are valid YAML and quote safely
    # a local directory means nothing inside the pod: the weights go on the chart's PVC
    # (mounted at /data), and HF_HUB_OFFLINE=1 keeps the engine off the hub
    model_url = f"/data/{PurePosixPath(plan.model.source).name}" if plan.model.local \
        else plan.model.source
    copy = ([f"# copy {j(plan.model.source)} to the model PVC as {model_url} before installing"]
            if plan.model.local else [])
    lines = [
        "# vllm-project/production-stack: helm install reviewbot vllm/vllm-stack -f values.yaml",
        *copy,
        "servingEngineSpec:",
        "  modelSpec:",
        f"  - name: {j(plan.model.name.lower())}",
        '    repository: "vllm/vllm-openai"',
        '    tag: "v0.32.0"',
        f"    modelURL: {j(model_url)}",
        f"    replicaCount: {plan.replicas_per_node * plan.nodes}",
        f"    requestGPU: {plan.tp}",
        '    requestCPU: 8',
        '    requestMemory: "64Gi"',
        '    pvcStorage: "200Gi"',
        "    vllmConfig:",
        f"      tensorParallelSize: {plan.tp}",
        f"      maxModelLen: {plan.max_model_len}",
        f"      dtype: {j(plan.dtype)}",
        f"      gpuMemoryUtilization: {j(f'{plan.memory.utilization:.2f}')}",
        f"      extraArgs: {j(extra)}",
        f"    env: {j(env)}",
        "routerSpec:",
        "  # one review, one engine: the bot sends this header with every request of a review",
        '  routingLogic: "session"',
        f"  sessionKey: {j(AFFINITY_HEADER.lower())}",
    ]
    return "\n".join(lines) + "\n"


def _kv_layer_label(model: ModelSpec) -> str:
    """The layers a token's KV lives in: all of them, or the full-attention ones of a hybrid."""
    if model.kv_layers == model.num_layers:
        return "layers"
    return f"full-attention layers (of {model.num_layers})"
