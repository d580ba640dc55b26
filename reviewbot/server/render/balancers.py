"""Plan → load-balancer configs (nginx, HAProxy) in front of the vLLM instances.

vLLM's `--api-key` guards only `/v1`, so the balancer checks `Authorization: Bearer` on every
path except `/health`. Limits per client address fit the bot's own traffic: a review sends
its chunks and passes `concurrency` at a time and counts tokens with bursts of `/tokenize`,
so `/v1` allows 10 requests/s with a burst of 50 and 32 in flight, and `/tokenize` (cheap,
no GPU) has a limit of its own (100/s, burst 1,000); the bot retries a 429 after Retry-After.
API keys live in a separate file, never in the rendered config.

Affinity: the chunks and passes of one review share a prompt prefix, which only the replica
that computed it has cached. The bot sends `X-Reviewbot-Review` (one opaque value per review,
reviewbot/headers.py), and both balancers hash on it (consistent hashing: adding a replica moves
few reviews); requests without it are balanced as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from reviewbot.headers import AFFINITY_HEADER
from reviewbot.server.plan.types import Plan


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
    header_var = "$http_" + AFFINITY_HEADER.lower().replace("-", "_")
    upstream = "\n".join(f"        server {addr} max_fails=2 fail_timeout=10s;"
                         for _, addr in _servers(plan))
    key_map = (f"""map $http_authorization $reviewbot_key_ok {{
        default 0;
        include {lb.nginx_keys};
    }}""" if lb.require_key else "# no API key check: loopback-only balancer")
    key_check = ("""if ($reviewbot_key_ok = 0) {
                return 401 '{"error": "missing or invalid API key"}\\n';
            }""" if lb.require_key else "")
    return f"""\
# reviewbot server plan --output nginx: {plan.model.name}, {len(plan.instances)} instance(s)
# API keys: {lb.nginx_keys}, one line per key:  "Bearer <key>" 1;
# Health: open-source nginx checks passively only (a server that fails twice is skipped for
# 10 s); it cannot send an inference request, so a hung engine whose /health still answers
# 200 keeps receiving reviews. For active inference checks use --output haproxy (a 1-token
# completion every 15 s), nginx Plus's health_check, or run `reviewbot server check` from a
# timer against each instance.
worker_processes auto;
pid {lb.pid_file};
error_log stderr warn;
events {{
    worker_connections 1024;
}}
http {{
    access_log off;  # request bodies are source code; the Authorization header is a secret
    {key_map}
    # /tokenize (counting, no GPU) and the rest are limited apart: a request is counted in the
    # zone whose key is not empty
    map $uri $reviewbot_api_client {{
        /tokenize "";
        default $binary_remote_addr;
    }}
    map $uri $reviewbot_tokenize_client {{
        /tokenize $binary_remote_addr;
        default "";
    }}
    limit_req_zone $reviewbot_api_client zone=reviewbot_per_client:10m rate={lb.rate}r/s;
    limit_req_zone $reviewbot_tokenize_client zone=reviewbot_tokenize:10m rate={lb.tokenize_rate}r/s;
    limit_conn_zone $binary_remote_addr zone=reviewbot_in_flight:10m;
    limit_req_status 429;
    limit_conn_status 429;
    # one review, one replica (its prompt prefix is cached there); others spread at random
    map {header_var} $reviewbot_route {{
        "" $request_id;
        default {header_var};
    }}
    upstream reviewbot_vllm {{
        hash $reviewbot_route consistent;
{upstream}
        keepalive 32;
    }}
    server {{
        listen {lb.listen};
        client_max_body_size 32m;
        default_type application/json;
        location = /health {{
            proxy_pass http://reviewbot_vllm;
        }}
        location / {{
            {key_check}
            limit_req zone=reviewbot_per_client burst={lb.burst} nodelay;
            limit_req zone=reviewbot_tokenize burst={lb.tokenize_burst} nodelay;
            limit_conn reviewbot_in_flight {lb.max_conn};
            proxy_pass http://reviewbot_vllm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;  # streamed tokens go straight through
            proxy_read_timeout {lb.timeout_s}s;
            proxy_send_timeout {lb.timeout_s}s;
            proxy_next_upstream error timeout http_502 http_503;
            proxy_next_upstream_tries 2;
        }}
    }}
}}
"""


def _haproxy_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def haproxy_cfg(plan: Plan, lb: LbSettings = LbSettings()) -> str:
    """HAProxy config with active health checks: a 1-token completion, so a hung engine
    (whose /health still answers 200) is taken out of rotation."""
    canary = json.dumps({"model": plan.model.name, "prompt": "ping", "max_tokens": 1},
                        separators=(",", ":"))
    servers = "\n".join(f"    server {name} {addr} check" for name, addr in _servers(plan))
    burst_limit = lb.rate + lb.burst
    tokenize_limit = lb.tokenize_rate + lb.tokenize_burst
    unauthorized = _haproxy_str('{"error": "missing or invalid API key"}')
    auth = (f"""    acl is_health path /health
    acl has_bearer req.hdr(authorization) -m beg "Bearer "
    acl key_ok req.hdr(authorization),word(2,' ') -m str -f {lb.haproxy_keys}
    http-request return status 401 content-type application/json string {unauthorized} \
if !is_health !has_bearer || !is_health !key_ok""" if lb.require_key
            else "    # no API key check: loopback-only balancer")
    return f"""\
# reviewbot server plan --output haproxy: {plan.model.name}, {len(plan.instances)} instance(s)
# API keys: {lb.haproxy_keys}, one key per line.
# Health checks send $VLLM_API_KEY when the instances have one (multi-machine setups).
# Rate limit per client address: at most rate+burst = {burst_limit} requests in any second
# and {lb.rate}/s on average over 10 s (HAProxy's sliding windows approximate a token bucket).
global
    maxconn 4096
    log stdout format raw local0

defaults
    mode http
    log global
    timeout connect 5s
    timeout http-request 30s
    timeout client {lb.timeout_s}s
    timeout server {lb.timeout_s}s
    timeout check 20s
    retries 2
    option redispatch

backend rate_1s
    stick-table type ip size 100k expire 30s store http_req_rate(1s)

backend rate_10s
    stick-table type ip size 100k expire 60s store http_req_rate(10s)

backend tokenize_1s
    stick-table type ip size 100k expire 30s store http_req_rate(1s)

frontend reviewbot
    bind {lb.listen}
    acl is_tokenize path /tokenize
    http-request track-sc0 src table rate_1s if !is_tokenize
    http-request track-sc1 src table rate_10s if !is_tokenize
    http-request track-sc2 src table tokenize_1s if is_tokenize
    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {burst_limit} }}
    http-request deny deny_status 429 if {{ sc_http_req_rate(1) gt {lb.rate * 10} }}
    http-request deny deny_status 429 if {{ sc_http_req_rate(2) gt {tokenize_limit} }}
{auth}
    default_backend vllm

backend vllm
    # one review, one replica (its prompt prefix is cached there); without the header: round robin
    balance hdr({AFFINITY_HEADER})
    hash-type consistent
    retry-on conn-failure empty-response
    option httpchk
    http-check send meth POST uri /v1/completions ver HTTP/1.1 hdr Host localhost hdr Content-Type application/json hdr Authorization "Bearer ${{VLLM_API_KEY}}" body {_haproxy_str(canary)}
    http-check expect status 200
    default-server inter 15s fall 3 rise 2
{servers}
"""
