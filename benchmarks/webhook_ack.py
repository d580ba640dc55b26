"""Acknowledgement latency of a real `reviewbot webhook` process, on loopback only.

Starts `reviewbot webhook` on a free 127.0.0.1 port with a temporary queue database and a
stand-in runner (this file's `stand_in_runner`, through the `--runner` test hook: each
"review" sleeps --review-seconds, so workers keep claiming and finishing jobs while the
load runs), then sends signed GitLab/GitHub push events open-loop at a fixed rate and
reports latency percentiles of the answers. Bounded: at most --requests requests and
--max-seconds seconds of sending; every request must be answered 202.

    .venv/bin/python benchmarks/webhook_ack.py --requests 2000 --rate 200 --max-seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
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
from pathlib import Path

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


async def load(port: int, requests: int, rate: float, max_seconds: float, keepalive: bool
               ) -> tuple[list[float], dict[int | str, int], float, float]:
    prepared = [request_for(i) for i in range(requests)]
    latencies: list[float] = []
    statuses: dict[int | str, int] = {}
    lag = 0.0
    client = RawClient(port, keepalive)

    async def one(path: str, headers: dict[str, str], body: bytes) -> None:
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
        tasks.append(asyncio.create_task(one(path, headers, body)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    elapsed = time.perf_counter() - t0
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
            load(port, args.requests, args.rate, args.max_seconds, not args.no_keepalive))
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


def start_server(db: Path, port: int, workers: int, review_seconds: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
           "REVIEWBOT_GITLAB_WEBHOOK_SECRET": GITLAB_SECRET,
           "REVIEWBOT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET, "REVIEWBOT_ADMIN_TOKEN": ADMIN_TOKEN,
           "REVIEWBOT_WEBHOOK_FORGE_URLS": "https://gitlab.example.com",
           "BENCH_REVIEW_SECONDS": str(review_seconds)}
    cmd = [str(Path(sys.executable).parent / "reviewbot"), "webhook", "--host", "127.0.0.1",
           "--port", str(port), "--db", str(db), "--workers", str(workers),
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
    args = parser.parse_args()
    if args.nice is not None:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)  # inherited by the listener
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_server(Path(tmp) / "queue.sqlite", port, args.workers, args.review_seconds)
        try:
            load_before, cpu_before = loadavg(), cpu_seconds(proc.pid)
            latencies, statuses, elapsed, lag = asyncio.run(
                load(port, args.requests, args.rate, args.max_seconds, not args.no_keepalive))
            load_after, cpu_used = loadavg(), cpu_seconds(proc.pid) - cpu_before
            server_side = server_ack_buckets(url)
            counts = httpx.get(f"{url}/jobs?limit=1", timeout=10,
                               headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).json()["counts"]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    ms = [x * 1000 for x in latencies]
    print(f"requests {len(ms)} in {elapsed:.2f} s ({len(ms) / elapsed:.0f}/s), statuses {statuses},"
          f" keep-alive {'off' if args.no_keepalive else 'on'}, max send lag {lag * 1000:.1f} ms")
    print(f"ack latency ms: p50 {percentile(ms, .50):.2f}  p95 {percentile(ms, .95):.2f}"
          f"  p99 {percentile(ms, .99):.2f}  max {max(ms):.2f}")
    print(f"server-side enqueue time (body read to job committed): {server_side}")
    print(f"listener CPU: {cpu_used:.2f} s for {len(ms)} requests"
          f" ({1000 * cpu_used / max(1, len(ms)):.2f} ms/request, workers included)")
    print(f"niceness of listener and generator: {os.getpriority(os.PRIO_PROCESS, 0)}")
    print(f"1-min load average before/after: {load_before}/{load_after} on {os.cpu_count()} CPUs")
    print(f"jobs in the queue database: {sum(counts.values())} {counts}")
    if args.control:
        print(control_run(args))
    if set(statuses) != {202}:
        raise SystemExit("not every request was acknowledged with 202")


if __name__ == "__main__":
    main()
