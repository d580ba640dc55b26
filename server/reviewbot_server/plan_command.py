"""`reviewbot server plan`: GPUs + model → explained vLLM settings and deploy configs.

Outside `plan/`, which `render/` reads: the command joins the two, so neither imports the other's
command."""

from __future__ import annotations

import json
import sys

import click

from reviewbot_server.errors import PlanRefused
from reviewbot_server.plan.hardware import local_cpus
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import DEFAULT_CONTEXT
from reviewbot_server.plan.planner import plan as make_plan
from reviewbot_server.plan.types import Plan
from reviewbot_server.render.balancers import LbSettings, haproxy_cfg, nginx_conf
from reviewbot_server.render.serve import VLLM_BIN, helm_values, plan_json, plan_text, systemd_text

OUTPUTS = ("text", "json", "systemd", "nginx", "haproxy", "helm")


def _render(p: Plan, output: str, vllm_bin: str, lb: LbSettings) -> str:
    if output == "json":
        return json.dumps(plan_json(p), indent=2) + "\n"
    if output == "systemd":
        return systemd_text(p, vllm_bin)
    if output == "nginx":
        return nginx_conf(p, lb)
    if output == "haproxy":
        return haproxy_cfg(p, lb)
    if output == "helm":
        return helm_values(p)
    return plan_text(p)


def _refuse(refused: PlanRefused, output: str) -> None:
    """Exit 1 with the reason and the nearest plan that works (stderr; JSON on stdout)."""
    near = refused.nearest
    click.echo(f"reviewbot: cannot plan: {refused}", err=True)
    for alt in refused.alternatives:
        click.echo(f"  would work: {alt}", err=True)
    if near is not None:
        click.echo(f"nearest plan that works: --max-model-len {near.max_model_len}, "
                   f"{near.weights.label} weights, TP={near.tp}, "
                   f"{near.max_concurrent_reviews} review(s) at once", err=True)
        if output == "text":
            click.echo(plan_text(near), err=True)
    if output == "json":
        body = {"error": str(refused), "alternatives": list(refused.alternatives),
                "nearest": plan_json(near) if near else None}
        click.echo(json.dumps(body, indent=2))
    sys.exit(1)


@click.command("plan")
@click.option("--gpus", "gpus_spec", required=True,
              help="COUNTxTYPE[,COUNTxTYPE…] per machine (4xT4, 2xA10, 1xRTX4090) or a profile.")
@click.option("--model", "model_ref", required=True,
              help="Local model directory (config.json) or a catalog name (Qwen2.5-Coder-7B).")
@click.option("--max-model-len", type=int, default=DEFAULT_CONTEXT, show_default=True,
              help="Review budget in tokens.")
@click.option("--quantization", default=None,
              help="Weights: bf16, fp8, awq, gptq (4-bit), gptq-int8. Default: the checkpoint's.")
@click.option("--kv-cache-dtype", default=None, help="auto or fp8. Default: fp8 only if needed.")
@click.option("--nodes", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Identical machines behind one load balancer.")
@click.option("--tensor-parallel-size", "tensor_parallel_size", type=click.IntRange(1, 16),
              default=None, help="GPUs per replica, instead of the planner's choice.")
@click.option("--replicas", type=click.IntRange(1, 16), default=None,
              help="Replicas per machine, instead of every GPU group the TP size leaves.")
@click.option("--cpus", type=click.IntRange(1, 4096), default=None,
              help="CPU cores of each GPU machine, which size vLLM's API servers. "
                   "Default: the cores this process may use.")
@click.option("--output", type=click.Choice(OUTPUTS), default="text", show_default=True)
@click.option("--vllm-bin", default=VLLM_BIN, show_default=True,
              help="vllm executable for --output systemd.")
@click.option("--listen", default="0.0.0.0:8000", show_default=True,
              help="Load balancer address for --output nginx|haproxy.")
@click.option("--rate-limit", type=click.IntRange(1, 10_000), default=LbSettings.rate,
              show_default=True, help="/v1 requests/s per client address at the load balancer.")
@click.option("--burst", type=click.IntRange(0, 10_000), default=LbSettings.burst,
              show_default=True, help="/v1 requests above the rate a client may send at once "
              "(a review sends its chunks and verification passes together).")
def plan_command(gpus_spec: str, model_ref: str, max_model_len: int, quantization: str | None,
                 kv_cache_dtype: str | None, nodes: int, tensor_parallel_size: int | None,
                 replicas: int | None, cpus: int | None, output: str, vllm_bin: str,
                 listen: str, rate_limit: int, burst: int) -> None:
    """Compute and explain a vLLM deployment for these GPUs and this model."""
    model = load_model(model_ref)
    try:
        p = make_plan(gpus_spec, model, max_model_len=max_model_len, quantization=quantization,
                      kv_cache_dtype=kv_cache_dtype, nodes=nodes,
                      tensor_parallel_size=tensor_parallel_size, replicas=replicas,
                      cpus=cpus or local_cpus())
    except PlanRefused as refused:
        _refuse(refused, output)
        return
    lb = LbSettings(listen=listen, rate=rate_limit, burst=burst)
    click.echo(_render(p, output, vllm_bin, lb), nl=False)


plan = plan_command  # the name server/reviewbot_server/cli.py imports lazily
