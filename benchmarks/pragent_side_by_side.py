"""reviewbot and PR-Agent side by side: same diffs, same vLLM, same strict fake GitLab (issue 6).

For each diff, each bot gets a fresh fake GitLab (benchmarks/fake_gitlab_for_pragent.py: the
forge tests' fake plus the few endpoints PR-Agent needs) serving the same merge request, and
talks to the model server through a recording relay (a thin local HTTP forwarder used only
here), so both are measured the same way:
- requests: chat completions the bot sent (the relay's log); /tokenize calls listed apart;
- prompt tokens: the server's own `usage.prompt_tokens` of each answered request; requests the
  server refused (e.g. over the context) are counted with their status;
- share of changed lines sent to the model: every changed line of the reviewable files (after
  reviewbot's own filters: lock files, minified, vendored ... are not reviewable) is looked up
  in the prompts of the answered requests, as a `+text` / `-text` line (an optional line number
  in front, as PR-Agent writes its hunks), multiset-matched, so a line counts once per prompt
  occurrence; reviewbot's own stats (`changed_lines_sent`) are shown next to it;
- wall time: the bot's process from start to exit (and the span of its model requests);
- comments at valid positions: positioned POSTs to discussions/notes/draft_notes the fake
  accepted (201) vs refused (400 `line_code can't be blank`, the fake validates like GitLab).

    python benchmarks/pragent_side_by_side.py --base-url http://127.0.0.1:PORT/v1 \
        [--diffs small,large] [--small-lines 1000] [--output json]

PR-Agent runs from its own venv (default /work/pragent-venv/bin/python; pr-agent needs Python
>= 3.12): `python -m pr_agent.cli --pr_url URL review` with CONFIG__*/GITLAB__/OPENAI__ env vars,
`PR_REVIEWER__INLINE_KEY_ISSUES=true` (so that it posts inline comments at all), its output
capped at --max-output-tokens like reviewbot's, and TIKTOKEN_CACHE_DIR at litellm's bundled
encodings (offline). reviewbot runs as `reviewbot review --mr 7 --project 42 ...`.
The large diff is a real release range (pip 23.0.1..23.2.1 source trees installed on this
machine, via benchmarks/chunking.py), else the synthetic generator at --large-lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.append(str(ROOT))  # after $PYTHONPATH: a pinned snapshot of the code can win

import ceiling
from fake_gitlab_for_pragent import TOKEN, fake_gitlab_for, mr_url, posted_positions

from reviewbot import diff as diffmod
from reviewbot.engine import filters

PRAGENT_PYTHON = "/work/pragent-venv/bin/python"

# -- the recording relay ------------------------------------------------------------------------


class Relay:
    """127.0.0.1 HTTP forwarder to the model server that records every request it relays."""

    def __init__(self, upstream_root: str) -> None:
        self.upstream = upstream_root.rstrip("/")
        self.scripted = False  # when set, answers are replaced by scripted_answer()
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.http = httpx.Client(timeout=1800, limits=httpx.Limits(max_connections=64))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.root_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.http.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _relay(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "content-length", "connection", "accept-encoding")
                }
                t0 = time.monotonic()
                if relay.scripted and self.path.endswith("/chat/completions") and body:
                    # the answer is replaced anyway: do not wait for a random model's tokens
                    req = json.loads(body)
                    req["max_tokens"] = 1
                    req.pop("max_completion_tokens", None)
                    body = json.dumps(req).encode()
                r = relay.http.request(
                    method, relay.upstream + self.path, content=body, headers=headers
                )
                data = r.content
                if (
                    relay.scripted
                    and self.path.endswith("/chat/completions")
                    and r.status_code == 200
                ):
                    data = scripted_answer(json.loads(body), json.loads(data))
                entry: dict[str, Any] = {
                    "method": method,
                    "path": self.path,
                    "t0": t0,
                    "t1": time.monotonic(),
                    "status": r.status_code,
                }
                if self.path.endswith("/chat/completions") and body:
                    entry["request"] = json.loads(body)
                    try:
                        entry["usage"] = json.loads(data).get("usage")
                    except ValueError:  # streamed: the usage is in the last chunk, if any
                        entry["usage"] = None
                    if r.status_code != 200:
                        entry["error"] = data[:500].decode("utf-8", "replace")
                with relay.lock:
                    relay.log.append(entry)
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                        "content-encoding",
                    ):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._relay("GET")

            def do_POST(self) -> None:
                self._relay("POST")

        return Handler


# -- scripted answers: well-formed findings on lines the prompt showed -------------------------

SCRIPTED_PER_REQUEST = 3


def scripted_answer(req: dict[str, Any], resp: dict[str, Any]) -> bytes:
    """Replace the model's answer by up to 3 well-formed findings, each on a line the request
    itself showed (the first line of each of the first anchor branches for reviewbot; the first
    added line of each of the first files for PR-Agent). A random-weight model rarely produces a
    finding at all; this pass isolates how each bot maps a finding to a GitLab position."""
    choice = resp["choices"][0]
    tools = req.get("tools") or []
    if tools and tools[0].get("function", {}).get("name") == "report_findings":
        params = tools[0]["function"]["parameters"]
        props = params["properties"]["findings"]["items"]["properties"]
        findings = []
        base = {
            "severity": "major",
            "category": "bug",
            "title": "Scripted finding",
            "body": "Placed on a line this request showed.",
        }
        if "location" in props:  # anchors: one anyOf branch per (path, side) with line ranges
            for b in props["location"]["anyOf"][:SCRIPTED_PER_REQUEST]:
                line = b["properties"]["line"]
                lo = line.get("minimum", (line.get("anyOf") or [{}])[0].get("minimum", 1))
                loc = {
                    "path": b["properties"]["path"]["enum"][0],
                    "side": b["properties"]["side"]["enum"][0],
                    "line": lo,
                }
                findings.append({**base, "location": loc})
        else:  # any other integer anchor (e.g. a row of the shown diff): its first ranges
            key = next(
                k
                for k, v in props.items()
                if k not in ("end_row",)
                and isinstance(v, dict)
                and ("minimum" in v or "anyOf" in v)
            )
            spans = props[key].get("anyOf") or [props[key]]
            for span in spans[:SCRIPTED_PER_REQUEST]:
                findings.append({**base, key: span["minimum"]})
        args = json.dumps({"summary": "scripted", "findings": findings})
        choice["message"] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{time.monotonic_ns()}",
                    "type": "function",
                    "function": {"name": "report_findings", "arguments": args},
                }
            ],
        }
        choice["finish_reason"] = "tool_calls"
    else:  # PR-Agent's review: YAML with key issues
        text = prompt_text(req)
        picks: list[tuple[str, int]] = []
        current = None
        for line in text.split("\n"):
            m = re.match(r"^## File: '(.+)'$", line)
            if m:
                current = m.group(1)
                continue
            m = re.match(r"^(\d+) \+", line)
            if m and current and all(p != current for p, _ in picks):
                picks.append((current, int(m.group(1))))
                if len(picks) == SCRIPTED_PER_REQUEST:
                    break
        issues = "".join(
            f"    - relevant_file: |\n        {path}\n      issue_header: |\n        Possible Bug\n"
            f"      issue_content: |\n        Placed on a line this request showed.\n"
            f"      start_line: {n}\n      end_line: {n}\n"
            for path, n in picks
        )
        yaml = (
            "```yaml\nreview:\n  estimated_effort_to_review_[1-5]: |\n    2\n"
            "  relevant_tests: |\n    No\n  key_issues_to_review:\n"
            + issues
            + "  security_concerns: |\n    No\n```\n"
        )
        choice["message"] = {"role": "assistant", "content": yaml}
        choice["finish_reason"] = "stop"
    return json.dumps(resp).encode()


# -- the diffs --------------------------------------------------------------------------------


def diffs(which: list[str], small_lines: int, large_lines: int) -> list[tuple[str, dict, dict]]:
    out = []
    for name in which:
        if name == "small":
            old, new = ceiling.synthetic_trees(small_lines)
            out.append((f"synthetic {small_lines}-line", old, new))
        elif name == "large":
            import chunking  # benchmarks/chunking.py

            pip = chunking.pip_trees()
            if pip is not None:
                label, old, new = pip
                out.append((f"release range {label}", old, new))
            else:
                old, new = ceiling.synthetic_trees(large_lines)
                out.append((f"synthetic {large_lines}-line", old, new))
    return out


# -- coverage from the prompts ------------------------------------------------------------------

# reviewbot renders "+ 12| text"; PR-Agent "12 +text" (new hunk) and "-text" (old hunk) or raw
_PROMPT_LINE = (
    re.compile(r"^([+-]) \d+\| (.*)$"),
    re.compile(r"^\d+ ([+-])(.*)$"),
    re.compile(r"^([+-])(.*)$"),
)


def changed_lines(raw: bytes) -> tuple[Counter, int, int]:
    """(sign, text) multiset of the reviewable files' changed lines; reviewable and all counts."""
    changes = diffmod.parse(raw)
    reviewed, _ = filters.split(changes, ())
    want: Counter = Counter()
    for f in reviewed.files:
        for h in f.hunks:
            for dl in h.lines:
                if dl.kind in "+-":
                    want[(dl.kind, dl.text.rstrip("\r"))] += 1
    return want, reviewed.changed_lines, changes.changed_lines


def prompt_text(req: dict[str, Any]) -> str:
    parts = []
    for m in req.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts += [p.get("text", "") for p in c if isinstance(p, dict)]
    return "\n".join(parts)


def lines_seen(want: Counter, prompts: list[str]) -> int:
    have: Counter = Counter()
    for text in prompts:
        for line in text.split("\n"):
            for pattern in _PROMPT_LINE:
                m = pattern.match(line)
                if m:
                    have[(m.group(1), m.group(2).rstrip("\r"))] += 1
                    break
    return sum(min(n, have[k]) for k, n in want.items())


# -- running the bots ------------------------------------------------------------------------------


def run_bot(
    kind: str, old: dict, new: dict, relay: Relay, args: argparse.Namespace, work: Path
) -> dict[str, Any]:
    with fake_gitlab_for(old, new, work / f"{kind}-gl") as state:
        since = len(relay.log)
        base_url = f"{relay.root_url}/v1"
        out_json = work / f"{kind}-result.json"
        if kind == "reviewbot":
            cmd = [
                str(ROOT / ".venv/bin/reviewbot"),
                "review",
                "--mr",
                str(state.iid),
                "--project",
                str(state.project_id),
                "--gitlab-url",
                state.url,
                "--gitlab-token",
                TOKEN,
                "--base-url",
                base_url,
                "--model",
                args.model,
                "--concurrency",
                str(args.concurrency),
                "--output",
                "json",
                "--output-file",
                str(out_json),
                "--no-progress",
            ]
            env = dict(os.environ)
        else:
            cmd = [args.pragent_python, "-m", "pr_agent.cli", "--pr_url", mr_url(state), "review"]
            env = pragent_env(state.url, base_url, args)
        t0 = time.monotonic()
        proc = subprocess.run(
            cmd, check=False, env=env, capture_output=True, text=True, timeout=args.timeout
        )
        wall = time.monotonic() - t0
        (work / f"{kind}.log").write_text(proc.stdout + "\n=====\n" + proc.stderr)
        calls = [e for e in relay.log[since:] if "request" in e]
        tokenize = [e for e in relay.log[since:] if e["path"].endswith("/tokenize")]
        answered = [e for e in calls if e["status"] == 200]
        res: dict[str, Any] = {
            "exit_code": proc.returncode,
            "wall_s": wall,
            "model_span_s": (max(e["t1"] for e in calls) - min(e["t0"] for e in calls))
            if calls
            else 0.0,
            "requests": len(calls),
            "requests_failed": len(calls) - len(answered),
            "failures": [e.get("error", "")[:300] for e in calls if e["status"] != 200][:3],
            "tokenize_calls": len(tokenize),
            "prompt_tokens": sum((e.get("usage") or {}).get("prompt_tokens", 0) for e in answered),
            "completion_tokens": sum(
                (e.get("usage") or {}).get("completion_tokens", 0) for e in answered
            ),
            "max_tokens_sent": sorted({e["request"].get("max_tokens") for e in calls}, key=str),
            "positions": posted_positions(state),
            "_prompts": [prompt_text(e["request"]) for e in answered],
            "_all_prompts": [prompt_text(e["request"]) for e in calls],
        }
        if kind == "reviewbot" and out_json.is_file():
            stats = json.loads(out_json.read_text()).get("stats", {})
            res["own_stats"] = {
                k: stats.get(k)
                for k in (
                    "changed_lines",
                    "changed_lines_sent",
                    "chunks",
                    "requests",
                    "prompt_tokens",
                    "files_reviewed",
                    "files_total",
                )
            }
        return res


def pragent_env(gitlab_url: str, base_url: str, args: argparse.Namespace) -> dict[str, str]:
    find = "import importlib.util as u; print(u.find_spec('litellm').submodule_search_locations[0])"
    site = subprocess.run(
        [args.pragent_python, "-c", find],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {
        **os.environ,
        "CONFIG__GIT_PROVIDER": "gitlab",
        "GITLAB__URL": gitlab_url,
        "GITLAB__PERSONAL_ACCESS_TOKEN": TOKEN,
        "GITLAB__AUTH_TYPE": "private_token",
        "CONFIG__MODEL": f"openai/{args.model}",
        "OPENAI__API_BASE": base_url,
        "OPENAI__KEY": "EMPTY",
        "CONFIG__CUSTOM_MODEL_MAX_TOKENS": str(args.max_model_tokens),
        "CONFIG__MAX_MODEL_TOKENS": str(args.max_model_tokens),
        "CONFIG__MAX_OUTPUT_TOKENS": str(args.max_output_tokens),
        "CONFIG__FALLBACK_MODELS": "[]",
        "CONFIG__PUBLISH_OUTPUT": "true",
        "PR_REVIEWER__INLINE_KEY_ISSUES": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TIKTOKEN_CACHE_DIR": os.path.join(site, "litellm_core_utils", "tokenizers"),
    }


def pragent_version(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('pr-agent'))"],
        check=False,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", help="the vLLM /v1 URL (else --start-cpu-tiny-qwen)")
    ap.add_argument("--start-cpu-tiny-qwen", action="store_true")
    ap.add_argument("--model-dir", type=Path, default=ceiling.DEFAULT_MODEL_DIR)
    ap.add_argument("--max-model-len", type=int, default=65536)
    ap.add_argument("--model", default="qwen-tiny", help="served model name")
    ap.add_argument("--diffs", default="small,large")
    ap.add_argument("--small-lines", type=int, default=1000)
    ap.add_argument("--large-lines", type=int, default=30000)
    ap.add_argument("--bots", default="reviewbot,pragent")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-output-tokens", type=int, default=1024)
    ap.add_argument(
        "--max-model-tokens", type=int, help="PR-Agent's limits (default: the server's)"
    )
    ap.add_argument("--pragent-python", default=PRAGENT_PYTHON)
    ap.add_argument("--timeout", type=float, default=1200)
    ap.add_argument(
        "--positions-pass",
        action="store_true",
        help="also run each bot once more with scripted findings (see scripted_answer)",
    )
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--output", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="side-by-side-"))
    work.mkdir(parents=True, exist_ok=True)

    import contextlib

    with contextlib.ExitStack() as stack:
        base_url = args.base_url or stack.enter_context(
            ceiling.serve_tiny_qwen(args.model_dir, args.max_model_len, work / "vllm.log")
        )
        root = base_url.rstrip("/").removesuffix("/v1")
        served = httpx.get(f"{root}/v1/models", timeout=30).json()["data"]
        max_len = next((m.get("max_model_len") for m in served if m["id"] == args.model), None)
        if args.max_model_tokens is None:
            args.max_model_tokens = int(max_len or args.max_model_len)
        relay = stack.enter_context(Relay(root))
        report: dict[str, Any] = {
            "pr_agent_version": pragent_version(args.pragent_python),
            "server": base_url,
            "server_max_model_len": max_len,
            "pragent_max_model_tokens": args.max_model_tokens,
            "max_output_tokens": args.max_output_tokens,
            "concurrency": args.concurrency,
            "workdir": str(work),
            "diffs": [],
        }
        for label, old, new in diffs(args.diffs.split(","), args.small_lines, args.large_lines):
            import chunking

            raw = chunking.range_diff(old, new)
            want, reviewable, total = changed_lines(raw)
            tokens = httpx.post(
                f"{root}/tokenize",
                json={"model": args.model, "prompt": raw.decode("utf-8", "replace")},
                timeout=120,
            ).json()
            entry: dict[str, Any] = {
                "diff": label,
                "bytes": len(raw),
                "lines": raw.count(b"\n"),
                "files": len(set(old) | set(new)),
                "diff_tokens": tokens.get("count"),
                "changed_lines": total,
                "reviewable_changed_lines": reviewable,
                "bots": {},
            }
            for bot in args.bots.split(","):
                print(f"[{label}] {bot} ...", file=sys.stderr, flush=True)
                res = run_bot(bot, old, new, relay, args, work / label.replace(" ", "_"))
                prompts = res.pop("_prompts")
                seen = lines_seen(want, prompts)
                # what the requests held, answered or not (a refused request shows nothing)
                res["changed_lines_in_all_requests"] = lines_seen(want, res.pop("_all_prompts"))
                res["changed_lines_seen"] = seen
                res["share_seen"] = seen / reviewable if reviewable else None
                res["prompt_tokens_per_changed_line_seen"] = (
                    res["prompt_tokens"] / seen if seen else None
                )
                pos = res["positions"]
                posted = pos["accepted"] + pos["refused"] + pos["other"]
                res["share_valid_positions"] = pos["accepted"] / posted if posted else None
                entry["bots"][bot] = res
                print(f"[{label}] {bot}: {json.dumps(res)}", file=sys.stderr, flush=True)
                if args.positions_pass:
                    relay.scripted = True
                    try:
                        sub = work / (label.replace(" ", "_") + "-scripted")
                        scripted = run_bot(bot, old, new, relay, args, sub)
                    finally:
                        relay.scripted = False
                    scripted.pop("_prompts")
                    scripted.pop("_all_prompts")
                    pos = scripted["positions"]
                    posted = pos["accepted"] + pos["refused"] + pos["other"]
                    res["scripted_positions"] = pos
                    res["scripted_share_valid"] = pos["accepted"] / posted if posted else None
                    res["scripted_exit_code"] = scripted["exit_code"]
                    print(
                        f"[{label}] {bot} scripted: {json.dumps(pos)}", file=sys.stderr, flush=True
                    )
            report["diffs"].append(entry)
    (work / "report.json").write_text(json.dumps(report, indent=2))
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        print(table(report))
    return 0


def _f(v: Any, spec: str = ".1f") -> str:
    if v is None:
        return "n/a"
    return format(v, spec) if isinstance(v, float) else str(v)


def table(report: dict[str, Any]) -> str:
    out = [
        (
            f"pr-agent {report['pr_agent_version']}; server {report['server']} "
            f"(max_model_len {report['server_max_model_len']})"
        )
    ]
    for d in report["diffs"]:
        out.append("")
        out.append(
            f"{d['diff']}: {d['bytes']:,} bytes, {d['lines']:,} lines, {d['files']} files, "
            f"{d['diff_tokens']:,} Qwen tokens; changed lines {d['changed_lines']:,} "
            f"(reviewable {d['reviewable_changed_lines']:,})"
        )
        bots = list(d["bots"])
        out.append("| | " + " | ".join(bots) + " |")
        out.append("|---|" + "---|" * len(bots))
        rows = [
            ("exit code", "exit_code", "d"),
            ("changed lines in answered prompts", "changed_lines_seen", "d"),
            ("changed lines in all requests", "changed_lines_in_all_requests", "d"),
            ("share of reviewable changed lines", "share_seen", ".1%"),
            ("requests (answered + refused)", "requests", "d"),
            ("requests refused by the server", "requests_failed", "d"),
            ("prompt tokens (answered)", "prompt_tokens", "d"),
            ("prompt tokens / changed line seen", "prompt_tokens_per_changed_line_seen", ".1f"),
            ("wall s (process)", "wall_s", ".1f"),
            ("model span s", "model_span_s", ".1f"),
            ("positioned comments accepted", None, None),
            ("positioned comments refused (400)", None, None),
            ("share at valid positions", "share_valid_positions", ".1%"),
            ("scripted pass: accepted/refused", None, None),
            ("scripted pass: share at valid positions", "scripted_share_valid", ".1%"),
        ]
        for label, key, spec in rows:
            cells = []
            for b in bots:
                r = d["bots"][b]
                if label.startswith("positioned comments accepted"):
                    v: Any = r["positions"]["accepted"]
                elif label.startswith("positioned comments refused"):
                    v = r["positions"]["refused"]
                elif label.startswith("scripted pass: accepted"):
                    sp = r.get("scripted_positions")
                    v = f"{sp['accepted']}/{sp['refused']}" if sp else None
                else:
                    v = r.get(key)
                cells.append("n/a" if v is None else (format(v, spec) if spec else str(v)))
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
