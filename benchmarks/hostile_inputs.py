"""Hostile change shapes (issue 19): each finishes, or is refused, in bounded time and memory.

Every shape is built in a temporary git repository (real git) and reviewed by
`reviewbot review` as a process against tests/fake_openai.py's instant server on 127.0.0.1
(no findings; no /tokenize, so the bot counts with its estimate): what is measured is the
bot alone. Wall time and peak memory come from /usr/bin/time.

    python benchmarks/hostile_inputs.py [--only NAME]

Shapes:
  hunks-6000     a 1 MB Python file with 6,000 one-line hunks (--git HEAD~1..HEAD)
  nest-8000      JavaScript blocks nested 8,000 deep, the innermost line changed
  nest-50000     the same, 50,000 deep
  tiny-100k      100,000 one-line hunks (the cap), as a diff file
  tiny-1m        1,000,000 one-line hunks (28.9 MB, under max_diff_mb): refused by the cap
  diff-50mb      a 50 MB diff file: refused before parsing
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fake_openai import FakeOpenAI, Reply

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def two_commits(repo: Path, name: str, old: str, new: str) -> list[str]:
    git(repo, "init", "-q", "-b", "main")
    (repo / name).write_text(old)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / name).write_text(new)
    git(repo, "commit", "-qam", "change")
    return ["--git", "HEAD~1..HEAD"]


def hunks_6000(repo: Path) -> list[str]:
    """6,000 functions of 8 lines (1 MB), each one's body changed: 6,000 one-line hunks (git's
    3 lines of context do not merge them)."""
    funcs = [f"def f{i}(value):\n    total = value * {i} + {i % 7}  # {'x' * 60}\n"
             f"    total += 1\n    total += 2\n    total += 3\n    return total\n\n\n"
             for i in range(6000)]
    old = "".join(funcs)
    new = "".join(f.replace(f"* {i} +", f"* {i + 1} +") for i, f in enumerate(funcs))
    return two_commits(repo, "big.py", old, new)


def nested(depth: int) -> Callable[[Path], list[str]]:
    """JavaScript blocks nested `depth` deep (no definition around them: the lookup climbs to
    the root), the innermost line changed."""
    def build(repo: Path) -> list[str]:
        old = "if (x) {\n" * depth + "  y = 1;\n" \
            + "}\n" * depth
        return two_commits(repo, "deep.js", old, old.replace("  y = 1;\n", "  y = 2;\n"))
    return build


def tiny(hunks: int) -> Callable[[Path], list[str]]:
    def build(repo: Path) -> list[str]:
        body = "".join(f"@@ -{2 * i + 1} +{2 * i + 1} @@\n-a\n+b\n" for i in range(hunks))
        path = repo / "change.diff"
        path.write_text("diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n" + body)
        return ["--diff", str(path)]
    return build


def diff_50mb(repo: Path) -> list[str]:
    path = repo / "change.diff"
    line = "+" + "y" * 99 + "\n"
    path.write_text("diff --git a/t.txt b/t.txt\n--- /dev/null\n+++ b/t.txt\n"
                    f"@@ -0,0 +1,{500_000} @@\n" + line * 500_000)
    return ["--diff", str(path)]


SHAPES: dict[str, Callable[[Path], list[str]]] = {
    "hunks-6000": hunks_6000, "nest-8000": nested(8000), "nest-50000": nested(50_000),
    "tiny-100k": tiny(100_000), "tiny-1m": tiny(1_000_000), "diff-50mb": diff_50mb,
}


def run(name: str, server: FakeOpenAI, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        flags = SHAPES[name](repo)
        stats = repo / "time.txt"
        argv = ["/usr/bin/time", "-f", "%e %M", "-o", str(stats), sys.executable, "-m",
                "reviewbot", "review", *flags, "--base-url", server.base_url, "--no-progress",
                "--no-verify", "--config", "/dev/null", "--output", "json", "--max-context",
                "65536"]
        env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(ROOT)}
        requests = len(server.requests)
        try:
            proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=env,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"shape": name, "held": False, "why": f"ran past {timeout:.0f} s"}
        wall, peak_kb = stats.read_text().split()[-2:]
        out: dict[str, object] = {"shape": name, "exit": proc.returncode, "wall_s": float(wall),
                                  "peak_mb": round(int(peak_kb) / 1024),
                                  "requests": len(server.requests) - requests}
        if proc.returncode == 2:
            out["refused"] = proc.stderr.strip().splitlines()[-1]
        elif proc.stdout.strip():
            s = json.loads(proc.stdout)["stats"]
            out["coverage"] = f"{s['changed_lines_sent']}/{s['changed_lines']}"
        out["traceback"] = "Traceback" in proc.stderr
        out["held"] = proc.returncode in (0, 2) and not out["traceback"]
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=sorted(SHAPES))
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()

    def empty(body: dict[str, object], n: int) -> Reply:
        return Reply(tool_args={"summary": "", "findings": []})

    with FakeOpenAI(empty, max_model_len=65536, tokenize=False) as server:
        for name in [args.only] if args.only else SHAPES:
            print(json.dumps(run(name, server, args.timeout)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
