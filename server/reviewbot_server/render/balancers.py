"""Plan → load-balancer configs (nginx, HAProxy) in front of the vLLM instances.

vLLM's `--api-key` guards only `/v1`, so the balancer checks `Authorization: Bearer` on every
path except `/health`. Limits per client address fit the bot's own traffic: a review sends
its chunks and passes `concurrency` at a time and counts tokens with bursts of `/tokenize`,
so `/v1` allows 10 requests/s with a burst of 50 and 32 in flight, and `/tokenize` (cheap,
no GPU) has a limit of its own (100/s, burst 1,000); the bot retries a 429 after Retry-After.
API keys live in a separate file, never in the rendered config.

Affinity: the chunks and passes of one review share a prompt prefix, which only the replica
that computed it has cached. The bot sends `X-Reviewbot-Review` (one opaque value per review,
render/names.py), and both balancers hash on it (consistent hashing: adding a replica moves
few reviews); requests without it are balanced as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from reviewbot_server.plan.types import Plan
from reviewbot_server.render.configs import render
from reviewbot_server.render.names import AFFINITY_HEADER, AFFINITY_NGINX_VAR


@dataclass(frozen=True)
class LbSettings:
    listen: str = "0.0.0.0:8000"
    nginx_keys: str = "/etc/reviewbot/nginx-api-keys.map"  # lines: "Bearer <key>" 1;
    haproxy_keys: str = "/etc/reviewbot/haproxy-api-keys.lst"  # lines: <key>
    rate: int = 10  # /v1 requests per second per client address
    burst: int = 50  # a review's chunks and verification passes, at once
    max_conn: int = 32  # requests in flight per client address
    tokenize_rate: int = 100  # /tokenize: counting, no GPU
    tokenize_burst: int = 1000
    pid_file: str = "/run/reviewbot-nginx.pid"
    timeout_s: int = 900  # a 60K-token review can take minutes on small GPUs
    require_key: bool = True  # False only for a loopback-only balancer (the CPU demo)


def _servers(plan: Plan) -> list[tuple[str, str]]:
    return [(f"vllm{i.index}", f"{i.host}:{i.port}") for i in plan.instances]


def nginx_conf(plan: Plan, lb: LbSettings = LbSettings()) -> str:
    """A complete nginx.conf (`nginx -t -c FILE` validates it). Open-source nginx has only
    passive health checks: a server failing twice is skipped for 10 s."""
    return render("nginx.conf.j2", model=plan.model.name, servers=_servers(plan), lb=lb,
                  header_var=AFFINITY_NGINX_VAR)


def haproxy_cfg(plan: Plan, lb: LbSettings = LbSettings()) -> str:
    """HAProxy config with active health checks: a 1-token completion, so a hung engine
    (whose /health still answers 200) is taken out of rotation."""
    canary = json.dumps({"model": plan.model.name, "prompt": "ping", "max_tokens": 1},
                        separators=(",", ":"))
    return render("haproxy.cfg.j2", model=plan.model.name, servers=_servers(plan), lb=lb,
                  canary=canary, header=AFFINITY_HEADER)
