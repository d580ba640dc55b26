"""GPU instances for `server up`: from the planner, and nginx in front of several.

With one vLLM process per GPU group on a host, clients get one endpoint through a real nginx
(config from `reviewbot_server.render.balancers`), run under the same keeper as vLLM so it dies with the
supervisor. vLLM's `--data-parallel-size` (one process, one port) needs none of this: pass
it after `--` with `--gpus cpu`-style single-instance use, or let the plan choose.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from reviewbot_server.errors import UsageError
from reviewbot_server.process.launcher import REAPER, LaunchSpec
from reviewbot_server.render.names import AFFINITY_NGINX_VAR


def gpu_specs(
    gpus: str, model_dir: Path, name: str, max_model_len: int, port: int,
    extra: tuple[str, ...],
) -> dict[str, LaunchSpec]:
    """One LaunchSpec per planned instance on this host, on ports port+1, port+2, …"""
    from reviewbot_server.plan.hardware import local_cpus
    from reviewbot_server.plan.model import load_model
    from reviewbot_server.plan.planner import plan

    the_plan = plan(gpus, load_model(str(model_dir)), max_model_len=max_model_len,
                    base_port=port + 1, cpus=local_cpus())
    specs: dict[str, LaunchSpec] = {}
    for inst in the_plan.instances:
        if inst.node != 0:
            continue  # other nodes run their own supervisor
        serve = inst.serve  # typed: nothing is parsed back out of an argv
        specs[f"gpu{inst.index}"] = LaunchSpec(
            model_dir=model_dir, port=inst.port, served_model_name=name,
            max_model_len=serve.max_model_len, dtype=serve.dtype,
            tool_call_parser=serve.tool_call_parser or "hermes",
            extra_args=serve.flags + extra, env=dict(inst.env),
        )
    if len(specs) == 1:  # a single instance serves on the client port itself
        (key, spec), = specs.items()
        specs = {key: replace(spec, port=port)}
    return specs


class Nginx:
    """A real nginx in front of the instances, in the foreground, under the keeper."""

    def __init__(self, conf: Path, prefix: Path) -> None:
        self.conf, self.prefix = conf, prefix
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("nginx")
        if binary is None:
            raise UsageError(f"several instances need nginx in PATH (config: {self.conf})")
        base = [binary, "-p", str(self.prefix), "-c", str(self.conf)]
        check = subprocess.run(base + ["-t"], capture_output=True, text=True, check=False)
        if check.returncode != 0:
            raise UsageError(f"nginx rejects {self.conf}: {check.stderr.strip()}")
        log = (self.prefix / "logs" / "nginx.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(REAPER), str(os.getpid()), "10", "--", *base, "-g", "daemon off;"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the keeper stops nginx (fast shutdown)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nginx_for(specs: dict[str, LaunchSpec], port: int, state_dir: Path) -> Nginx:
    """Write STATE_DIR/nginx.conf: a review's requests to one instance (its prompt prefix is
    cached there), as the rendered balancers route them; others spread; passive failover."""
    servers = "\n".join(f"        server {s.host}:{s.port} max_fails=2 fail_timeout=10s;"
                        for s in specs.values())
    (state_dir / "logs").mkdir(parents=True, exist_ok=True)
    conf = state_dir / "nginx.conf"
    conf.write_text(f"""\
# written by `reviewbot server up`: {len(specs)} vLLM instances behind one port
worker_processes 1;
pid {state_dir / 'nginx.pid'};
error_log {state_dir / 'logs' / 'nginx-error.log'} warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;  # request bodies are source code
    client_body_temp_path {state_dir / 'nginx-tmp'};
    proxy_temp_path {state_dir / 'nginx-tmp'};
    map {AFFINITY_NGINX_VAR} $reviewbot_route {{
        "" $request_id;
        default {AFFINITY_NGINX_VAR};
    }}
    upstream reviewbot_vllm {{
        hash $reviewbot_route consistent;
{servers}
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 32m;
        location / {{
            proxy_pass http://reviewbot_vllm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 900s;
            proxy_buffering off;  # streamed completions
            proxy_next_upstream error timeout http_502 http_503;
        }}
    }}
}}
""")
    (state_dir / "nginx-tmp").mkdir(exist_ok=True)
    return Nginx(conf, state_dir)
