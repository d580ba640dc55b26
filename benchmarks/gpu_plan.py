"""A sweep that fits the device's 30 minutes: vLLM started once, then a plan of runs read from a
file that later calls extend, without restarting the server (issue 25, item 5).

Runs ON the device machine, like benchmarks/gpu_run.py (whose pieces it uses), after the payload
is unpacked to --payload:

    python3 benchmarks/gpu_plan.py --payload /tmp/payload --plan /tmp/plan.jsonl --out $OUT

The plan is JSON lines, one run each, done in file order:

    {"id": "64k", "kind": "bot", "diff": "release", "concurrency": 32, "temperature": 0,
     "settings": {"chunk_tokens": 65536, "verify": false}, "estimate_s": 40}
    {"id": "64k-replay", "kind": "replay", "diff": "release", "temperature": 0,
     "settings": {"chunk_tokens": 65536}}
    {"id": "batch32k", "kind": "server", "args": ["--max-num-batched-tokens", "32768"]}
    {"id": "mix", "kind": "parallel", "reviews": [["mid", 8], ["small", 4]], "temperature": 0}

`kind` is bot (one review, through the engine), replay (the same review's exact requests all at
once: the ceiling), parallel (several reviews at once, `reviews`: [diff, how many] pairs, each
with its own engine at `concurrency` 8 and `settings`; `answers` "whole" and `budget_scale` as
gpu_run.fresh_budget says) or server (restart vLLM with these extra flags; later runs use it). After every start the server is warmed as `reviewbot server up`
warms it (one forced tool call per --warm-up-tokens size), so a plan's first run measures what
a first review after `server up` meets. A run's
result is appended to --results (on the device, default PLAN.results.jsonl) and every call copies
all results so far to $OUT/results.jsonl: a later call that appends runs to the plan does only
those. The plan is read again after every run, so a call may also add runs while one is going.
No run starts that would cross --deadline seconds after the start (estimate_s, or 1.3 x the
longest run of the same diff so far); the next call goes on where this one stopped. The server
is left running in its own session for the next call (its pid in PAYLOAD/vllm.pid).

With --url, a server already running is used (the CPU test of this driver: tests/test_gpu_plan.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_run  # the benchmark's pieces, beside this file

KINDS = ("bot", "replay", "parallel", "server")


def read_plan(path: Path) -> list[dict[str, Any]]:
    """The runs of the plan; a line that is not a run is reported, not fatal (the file is
    written by hand between calls)."""
    runs, seen = [], set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            run = json.loads(line)
            assert isinstance(run, dict) and isinstance(run.get("id"), str)
            assert run.get("kind") in KINDS and run["id"] not in seen
        except (ValueError, AssertionError):
            gpu_run.log(f"plan line {number} ignored: not a run with a new id and a kind of"
                        f" {', '.join(KINDS)}")
            continue
        seen.add(run["id"])
        runs.append(run)
    return runs


def done_ids(results: Path) -> set[str]:
    if not results.exists():
        return set()
    return {json.loads(line)["id"] for line in results.read_text().splitlines() if line.strip()}


def warm(url: str, sizes: tuple[int, ...], max_len: int, burst: int) -> dict[str, Any]:
    """The warm-up of `reviewbot server up` (reviewbot_server.supervise.canary.warm_up)."""
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    with httpx.Client() as client:
        return {"sizes": warm_up(client, url, gpu_run.SERVED, sizes, max_len, 300.0, burst)}


def restart(payload: Path, port: int, max_len: int, extra: list[str], limit: float,
            sizes: tuple[int, ...], burst: int) -> dict[str, Any]:
    """A `server` run: stop the server of the pid file (started by an earlier run of this
    driver, in its own session) and start one with `extra` flags."""
    pid_file = payload / "vllm.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 60
        while gpu_run.server_up(f"http://127.0.0.1:{port}") and time.monotonic() < deadline:
            time.sleep(1)
    server = gpu_run.start_server(payload, port, max_len, payload / "vllm.log", limit,
                                  tuple(extra))
    return {"server": server, "warmup": warm(f"http://127.0.0.1:{port}", sizes, max_len, burst)}


def one(run: dict[str, Any], url: str, diffs: Path, args: argparse.Namespace) -> dict[str, Any]:
    gpu_run.TEMPERATURE = run.get("temperature")
    settings = run.get("settings", {})
    if run["kind"] == "server":
        return restart(args.payload, args.port, args.max_model_len, list(run.get("args", [])),
                       args.startup_limit, args.warm_up_tokens,
                       int(run.get("warm_up_burst", args.warm_up_burst)))

    def read(name: str) -> bytes:
        return (Path(name) if name.endswith(".diff") else diffs / f"{name}.diff").read_bytes()

    if run["kind"] == "parallel":
        reviews = [(name, read(name)) for name, n in run["reviews"] for _ in range(int(n))]
        return gpu_run.reviews_at_once(url, reviews, int(run.get("concurrency", 8)),
                                       run.get("answers", "expected"),
                                       float(run.get("budget_scale", 1.0)), **settings)
    raw = read(run["diff"])
    if run["kind"] == "bot":
        return gpu_run.bot_run(url, raw, int(run.get("concurrency", 32)),
                               run.get("answers", "expected"), **settings)
    return gpu_run.replay(url, raw, **settings)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--payload", type=Path, default=Path("/tmp/payload"))
    ap.add_argument("--plan", type=Path, required=True)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/gpu-plan-out")))
    ap.add_argument("--port", type=int, default=8011)
    ap.add_argument("--max-model-len", type=int, default=65536)
    ap.add_argument("--startup-limit", type=float, default=420)
    ap.add_argument("--deadline", type=float, default=540)
    ap.add_argument("--url", help="a server already running (no install, no start)")
    ap.add_argument("--served-name", default=gpu_run.SERVED)
    ap.add_argument("--serve-args", default="", help="more vLLM flags for the first start "
                    "(the planner's, say: --max-num-seqs 176 --max-num-batched-tokens 8192)")
    ap.add_argument("--warm-up-tokens", type=lambda v: tuple(int(x) for x in v.split(",")),
                    default=None, help="prompt sizes of the warm-up calls (default: server up's)")
    ap.add_argument("--warm-up-burst", type=int, default=None,
                    help="calls at once after them (default: server up's; a server run's "
                         "warm_up_burst overrides it)")
    args = ap.parse_args()
    begin = time.monotonic()
    gpu_run.SERVED = args.served_name
    results = args.results or args.plan.with_name(args.plan.name + ".results.jsonl")
    args.out.mkdir(parents=True, exist_ok=True)
    url = args.url or f"http://127.0.0.1:{args.port}"
    if not args.url:
        gpu_run.install(args.payload)
    gpu_run.reviewbot_importable()
    from reviewbot_server.supervise.canary import WARM_UP_BURST, WARM_UP_TOKENS
    args.warm_up_tokens = args.warm_up_tokens or WARM_UP_TOKENS
    if args.warm_up_burst is None:
        args.warm_up_burst = WARM_UP_BURST
    if not args.url and not gpu_run.server_up(url):
        gpu_run.log("server", gpu_run.start_server(args.payload, args.port,
                                                   args.max_model_len,
                                                   args.payload / "vllm.log",
                                                   args.startup_limit,
                                                   tuple(args.serve_args.split())))
        gpu_run.log("warmup", warm(url, args.warm_up_tokens, args.max_model_len,
                                   args.warm_up_burst))
    import openai  # importable only after install(): the payload's site packages

    from reviewbot.errors import ReviewbotError

    expected = (openai.APIError, ReviewbotError, OSError, RuntimeError, ValueError, ImportError)
    took: dict[str, float] = {}
    skipped: list[str] = []
    while True:
        finished = done_ids(results)
        pending = [r for r in read_plan(args.plan) if r["id"] not in finished
                   and r["id"] not in skipped]
        if not pending:
            break
        run = pending[0]
        guess = float(run.get("estimate_s") or 1.3 * took.get(run.get("diff", ""), 60.0))
        if time.monotonic() - begin + guess > args.deadline:
            gpu_run.log(f"{run['id']}: left for the next call (about {guess:.0f} s)")
            if run["kind"] == "server":  # what follows is measured on that server, not this
                break
            skipped.append(run["id"])
            continue
        t = time.monotonic()
        try:
            body = one(run, url, args.payload / "diffs", args)
        # what a run can meet: the server's errors, a file, a missing module; recorded, and the
        # sweep goes on (a partial sweep beats none). Anything else is a bug: it ends the call.
        except expected as exc:
            body = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        took[run.get("diff", "")] = max(took.get(run.get("diff", ""), 0.0), time.monotonic() - t)
        line = {"id": run["id"], "run": run, "seconds": round(time.monotonic() - t, 2), **body}
        with results.open("a") as fh:
            fh.write(json.dumps(line, default=str) + "\n")
        gpu_run.log(run["id"], {k: v for k, v in body.items()
                                if k not in ("stats", "metrics", "per_request")})
    (args.out / "results.jsonl").write_text(results.read_text() if results.exists() else "")
    (args.out / "left.json").write_text(json.dumps(skipped) + "\n")
    vlog = args.payload / "vllm.log"
    if vlog.exists():
        lines = vlog.read_text(errors="replace").splitlines()
        (args.out / "vllm_log_tail.txt").write_text("\n".join(lines[-300:]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
