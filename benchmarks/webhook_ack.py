"""Acknowledgement latency of a real `reviewbot webhook` process, on loopback only.

Starts `reviewbot webhook` on a free 127.0.0.1 port with a temporary queue database and a
stand-in runner (this file's `stand_in_runner`, through the `--runner` test hook: each
"review" sleeps --review-seconds, so workers keep claiming and finishing jobs while the
load runs), then sends signed GitLab/GitHub push events open-loop at a fixed rate and
reports latency percentiles of the answers. Bounded: at most --requests requests and
--max-seconds seconds of sending; every request must be answered 202.

    .venv/bin/python benchmarks/webhook_ack.py --requests 2000 --rate 200 --max-seconds 10

With --postgres ADMIN_URL the queue is a fresh database on that server (dropped afterwards)
and --listeners N processes share it, the load spread over them round-robin as a load
balancer would; the run then also reports how fast the jobs drain (jobs per second through
the stand-in reviews). --takeover measures instead how long a job held by a listener killed
with SIGKILL waits before another replica runs it (the lease is --lease seconds).

    PG=$(scripts/postgres.sh start /tmp/bench-pg 55433)
    .venv/bin/python benchmarks/webhook_ack.py --postgres "$PG" --listeners 2 --requests 2000
    .venv/bin/python benchmarks/webhook_ack.py --postgres "$PG" --takeover --lease 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from reviewbot.webhook.jobs import Job, Outcome

GITLAB_SECRET = "bench-gitlab-secret"
GITHUB_SECRET = "bench-github-secret"
ADMIN_TOKEN = "bench-admin-token"
IDLE_REUSE_S = 2.0  # uvicorn closes keep-alive connections idle for 5 s


def stand_in_runner(job: Job, cancel: threading.Event) -> Outcome:
    cancel.wait(float(os.environ.get("BENCH_REVIEW_SECONDS", "0.1")))
    return Outcome.cancelled() if cancel.is_set() else Outcome.done()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request_for(i: int) -> tuple[str, dict[str, str], bytes]:
    sha = hashlib.sha1(str(i).encode()).hexdigest()
    if i % 2:
        body = json.dumps({
            "object_kind": "merge_request",
            "project": {"id": 1000 + i % 50, "web_url": f"https://gitlab.example.com/g/p{i % 50}",
                        "path_with_namespace": f"g/p{i % 50}"},
            "object_attributes": {"action": "update", "oldrev": "0" * 40, "iid": i % 400,
                                  "last_commit": {"id": sha}},
        }).encode()
        headers = {"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": GITLAB_SECRET,
                   "Idempotency-Key": f"bench-{i}", "Content-Type": "application/json"}
        return "/webhook/gitlab", headers, body
    body = json.dumps({
        "action": "synchronize", "number": i % 400,
        "pull_request": {"number": i % 400, "head": {"sha": sha}},
        "repository": {"full_name": f"o/r{i % 50}", "url": f"https://api.github.com/repos/o/r{i % 50}"},
    }).encode()
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": signature,
               "X-GitHub-Delivery": f"bench-{i}", "Content-Type": "application/json"}
    return "/webhook/github", headers, body


@contextlib.contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


class RawClient:
    """A minimal HTTP/1.1 client over asyncio streams, so the load generator itself uses
    little of the two CPUs it shares with the listener (httpx costs about 1 ms/request)."""

    def __init__(self, port: int, keepalive: bool) -> None:
        self._port = port
        self._keepalive = keepalive
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self._idle:
            reader, writer, since = self._idle.pop()
            if time.monotonic() - since < IDLE_REUSE_S:
                return reader, writer
            writer.close()  # the listener may be closing it (keep-alive timeout): do not race
        return await asyncio.open_connection("127.0.0.1", self._port)

    async def post(self, path: str, headers: dict[str, str], body: bytes) -> int:
        reader, writer = await self._connection()
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{self._port}",
                 f"Content-Length: {len(body)}",
                 "Connection: " + ("keep-alive" if self._keepalive else "close")]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await reader.readexactly(length)
        if self._keepalive:
            self._idle.append((reader, writer, time.monotonic()))
        else:
            writer.close()
        return status

    def close(self) -> None:
        for _, writer, _ in self._idle:
            writer.close()


async def load(ports: list[int], requests: int, rate: float, max_seconds: float,
               keepalive: bool) -> tuple[list[float], dict[int | str, int], float, float]:
    prepared = [request_for(i) for i in range(requests)]
    latencies: list[float] = []
    statuses: dict[int | str, int] = {}
    lag = 0.0
    clients = [RawClient(port, keepalive) for port in ports]

    async def one(client: RawClient, path: str, headers: dict[str, str], body: bytes) -> None:
        start = time.perf_counter()
        code: int | str
        try:
            code = await client.post(path, headers, body)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            code = type(exc).__name__
        latencies.append(time.perf_counter() - start)
        statuses[code] = statuses.get(code, 0) + 1

    t0 = time.perf_counter()
    tasks = []
    for i, (path, headers, body) in enumerate(prepared):
        due = t0 + i / rate
        if due - t0 > max_seconds:
            break
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        lag = max(lag, time.perf_counter() - due)
        client = clients[i % len(clients)]  # round-robin, as a load balancer
        tasks.append(asyncio.create_task(one(client, path, headers, body)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    elapsed = time.perf_counter() - t0
    for client in clients:
        client.close()
    return latencies, statuses, elapsed, lag


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


CONTROL_SERVER = """
import asyncio, sys
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = 0
            for line in head.split(b"\\r\\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            body = b'{"status":"queued","job_id":1}'
            writer.write(b"HTTP/1.1 202 Accepted\\r\\ncontent-type: application/json\\r\\n"
                         b"content-length: %d\\r\\n\\r\\n%s" % (len(body), body))
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await asyncio.sleep(600)
asyncio.run(main())
"""


def control_run(args: argparse.Namespace) -> str:
    """The same load against a do-nothing asyncio responder: what the machine itself adds."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", CONTROL_SERVER, str(port)])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        latencies, statuses, _, lag = asyncio.run(
            load([port], args.requests, args.rate, args.max_seconds, not args.no_keepalive))
    finally:
        proc.kill()
        proc.wait(timeout=10)
    ms = [x * 1000 for x in latencies]
    return (f"control (do-nothing responder, same load): p50 {percentile(ms, .50):.2f}"
            f"  p95 {percentile(ms, .95):.2f}  p99 {percentile(ms, .99):.2f}  max {max(ms):.2f}"
            f"  statuses {statuses}, max send lag {lag * 1000:.1f} ms")


def server_ack_buckets(url: str) -> str:
    """The listener's own view (reviewbot_webhook_ack_seconds): share answered within each bound."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    cumulative: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("reviewbot_webhook_ack_seconds_bucket"):
            le = line.split('le="')[1].split('"')[0]
            cumulative[le] = cumulative.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
    total = cumulative.get("+Inf", 0.0) or 1.0
    return "  ".join(f"<={float(le) * 1000:g}ms {100 * n / total:.1f}%"
                     for le, n in cumulative.items() if le in ("0.001", "0.005", "0.01", "0.05"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 1)[0]


def start_server(queue: str, port: int, workers: int, review_seconds: float,
                 lease: float = 30.0) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
           "REVIEWBOT_GITLAB_WEBHOOK_SECRET": GITLAB_SECRET,
           "REVIEWBOT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET, "REVIEWBOT_ADMIN_TOKEN": ADMIN_TOKEN,
           "REVIEWBOT_WEBHOOK_FORGE_URLS": "https://gitlab.example.com",
           "REVIEWBOT_QUEUE_URL": queue, "REVIEWBOT_WEBHOOK_LEASE": str(lease),
           "BENCH_REVIEW_SECONDS": str(review_seconds)}
    cmd = [str(Path(sys.executable).parent / "reviewbot"), "webhook", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(workers),
           "--rate-limit", "100000", "--runner", "webhook_ack:stand_in_runner",
           "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("reviewbot webhook exited during start-up")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("reviewbot webhook did not become healthy in 20 s")


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def counts_at(url: str) -> dict[str, int]:
    return httpx.get(f"{url}/jobs?limit=1", timeout=10,
                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).json()["counts"]


def drain(url: str, t0: float, limit_s: float = 120.0) -> float:
    """Seconds from the first request until no job is queued or running (bounded)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        counts = counts_at(url)
        if counts["queued"] == counts["running"] == 0:
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise SystemExit(f"jobs not drained within {limit_s:g} s")


def takeover(queue: str, lease: float) -> None:
    """One job held by a listener that is then killed: seconds until another replica runs it."""
    ports = [free_port(), free_port()]
    procs = [start_server(queue, p, 1, 3600.0, lease) for p in ports]
    try:
        path, headers, body = request_for(1)
        with httpx.Client(base_url=f"http://127.0.0.1:{ports[0]}", timeout=10) as c:
            job_id = c.post(path, content=body, headers=headers).json()["job_id"]
            admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            deadline = time.monotonic() + 20
            while (job := c.get(f"/jobs/{job_id}", headers=admin).json())["state"] != "running":
                if time.monotonic() > deadline:
                    raise SystemExit("the job was not claimed")
                time.sleep(0.02)
        holder = procs[0] if f":{procs[0].pid}:" in job["worker"] else procs[1]
        other = ports[1] if holder is procs[0] else ports[0]
        holder.kill()
        killed = time.perf_counter()
        with httpx.Client(base_url=f"http://127.0.0.1:{other}", timeout=10) as c:
            deadline = time.monotonic() + 10 * lease + 10
            while True:
                job = c.get(f"/jobs/{job_id}", headers=admin).json()
                if job["state"] == "running" and f":{holder.pid}:" not in job["worker"]:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("no replica took the job over")
                time.sleep(0.02)
        print(f"lease {lease:g} s: the killed listener's job ran again on the other replica"
              f" {time.perf_counter() - killed:.2f} s after the kill (attempt {job['attempts']})")
    finally:
        stop(procs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=200.0, help="requests per second")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="cap on sending time")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--review-seconds", type=float, default=0.1)
    parser.add_argument("--no-keepalive", action="store_true", help="a new connection per request")
    parser.add_argument("--nice", type=int, default=None,
                        help="scheduling niceness for the listener and this generator (negative"
                             " values need root): shows the listener when it has CPU priority"
                             " over other work on a shared machine (systemd Nice=/CPUWeight=)")
    parser.add_argument("--control", action="store_true",
                        help="afterwards, send the same load to a do-nothing responder")
    parser.add_argument("--postgres", metavar="ADMIN_URL",
                        help="queue in a fresh database on this PostgreSQL server")
    parser.add_argument("--listeners", type=int, default=1,
                        help="listener processes on the one queue (needs --postgres)")
    parser.add_argument("--takeover", action="store_true",
                        help="measure how long a killed listener's job waits (needs --postgres)")
    parser.add_argument("--lease", type=float, default=30.0, help="seconds (--takeover)")
    args = parser.parse_args()
    if (args.listeners > 1 or args.takeover) and not args.postgres:
        raise SystemExit("several listeners share a queue only on PostgreSQL: give --postgres")
    if args.nice is not None:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)  # inherited by the listener
    with contextlib.ExitStack() as stack:
        if args.postgres:
            queue = stack.enter_context(fresh_database(args.postgres))
        else:
            queue = "sqlite:///" + str(Path(stack.enter_context(tempfile.TemporaryDirectory()))
                                       / "queue.sqlite")
        if args.takeover:
            takeover(queue, args.lease)
            return
        run(args, queue)


def run(args: argparse.Namespace, queue: str) -> None:
    ports = [free_port() for _ in range(args.listeners)]
    url = f"http://127.0.0.1:{ports[0]}"
    procs = [start_server(queue, port, args.workers, args.review_seconds) for port in ports]
    try:
        load_before, cpu_before = loadavg(), sum(cpu_seconds(p.pid) for p in procs)
        t0 = time.perf_counter()
        latencies, statuses, elapsed, lag = asyncio.run(
            load(ports, args.requests, args.rate, args.max_seconds, not args.no_keepalive))
        load_after = loadavg()
        cpu_used = sum(cpu_seconds(p.pid) for p in procs) - cpu_before
        server_side = server_ack_buckets(url)
        drained = drain(url, t0)
        counts = counts_at(url)
    finally:
        stop(procs)
    ms = [x * 1000 for x in latencies]
    backend = "PostgreSQL" if queue.startswith("postgres") else "SQLite"
    print(f"queue: {backend}, {args.listeners} listener process(es) x {args.workers} workers")
    print(f"requests {len(ms)} in {elapsed:.2f} s ({len(ms) / elapsed:.0f}/s), statuses {statuses},"
          f" keep-alive {'off' if args.no_keepalive else 'on'}, max send lag {lag * 1000:.1f} ms")
    print(f"ack latency ms: p50 {percentile(ms, .50):.2f}  p95 {percentile(ms, .95):.2f}"
          f"  p99 {percentile(ms, .99):.2f}  max {max(ms):.2f}")
    print(f"server-side enqueue time (body read to job committed): {server_side}")
    print(f"listeners' CPU: {cpu_used:.2f} s for {len(ms)} requests"
          f" ({1000 * cpu_used / max(1, len(ms)):.2f} ms/request, workers included)")
    print(f"niceness of listener and generator: {os.getpriority(os.PRIO_PROCESS, 0)}")
    print(f"1-min load average before/after: {load_before}/{load_after} on {os.cpu_count()} CPUs")
    print(f"jobs in the queue database: {sum(counts.values())} {counts}")
    print(f"drained {counts['done']} jobs ({args.review_seconds:g} s stand-in reviews) in"
          f" {drained:.2f} s from the first request: {counts['done'] / drained:.1f} jobs/s")
    if args.control:
        print(control_run(args))
    if set(statuses) != {202}:
        raise SystemExit("not every request was acknowledged with 202")


if __name__ == "__main__":
    main()
