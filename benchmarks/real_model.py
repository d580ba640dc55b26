"""The real demo model (Qwen2.5-Coder-1.5B-Instruct, CPU vLLM) on the golden set: the figures of
docs/precision.md's real-model row and docs/real-model.md (issue 33).

    python benchmarks/real_model.py --url http://127.0.0.1:PORT [--variant tool --variant json]
        [--golden tests/eval/planted] [--out benchmarks/results/real_model]

For each variant (findings_format × verify, as `reviewbot eval run --compare --variant V`), with
the model's demo settings (reviewbot_server.realmodel.SETTINGS, temperature 0): precision,
recall and F1 with their 90% bootstrap intervals, the unusable share, the wall time, how often a
chunk's summary named a problem beside an empty findings list (the named-problem request) and
how often none came after it (summary-only), and vLLM's prefix-cache counters around the run.
Each variant's scores go to OUT/<variant>.json as soon as it ends, so a cut run keeps what
finished. Talks only to the server given.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import metrics_delta, scrape

from reviewbot_server import realmodel

ROOT = Path(__file__).resolve().parents[1]


def config_file(folder: Path) -> Path:
    path = folder / "real.toml"
    lines = [f"{key} = {json.dumps(value)}" for key, value in realmodel.SETTINGS.items()
             if key != "verify"]  # the variant decides
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def named_problems(results: Path) -> dict[str, int]:
    """Chunks, named-problem requests and summary-only chunks over a variant's results."""
    out = {"chunks": 0, "named_requests": 0, "summary_only": 0}
    for path in results.glob("*.json"):
        stats = json.loads(path.read_text(encoding="utf-8"))["stats"]
        for key in out:
            out[key] += stats.get(key, 0)
    return out


def run_variant(url: str, golden: Path, variant: str, out: Path, config: Path) -> dict:
    before = scrape(url)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "eval", "run", "--golden", str(golden), "--results",
         str(out / "results"), "--compare", "--variant", variant, "--base-url", f"{url}/v1",
         "--config", str(config), "--output", "json"],
        capture_output=True, text=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{variant}: eval run exited {proc.returncode}: {proc.stderr[-2000:]}")
    doc = json.loads(proc.stdout)["variants"][0]
    delta = metrics_delta(before, scrape(url))
    doc.pop("cases")
    doc["wall_s"] = round(time.monotonic() - started, 1)
    doc["named"] = named_problems(out / "results" / variant)
    doc["prefix_cache"] = {k: delta.get(f"prefix_cache_{k}") for k in ("hits", "queries",
                                                                       "hit_rate")}
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the server root, without /v1")
    parser.add_argument("--golden", type=Path, default=ROOT / "tests" / "eval" / "planted")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "real_model")
    parser.add_argument("--variant", action="append",
                        default=None, help="tool+verify, tool, json+verify or json (repeatable)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        config = config_file(Path(scratch))
        for variant in args.variant or ["tool", "json", "tool+verify", "json+verify"]:
            doc = run_variant(args.url.rstrip("/"), args.golden, variant, args.out, config)
            (args.out / f"{variant}.json").write_text(json.dumps(doc, indent=1) + "\n",
                                                      encoding="utf-8")
            print(json.dumps(doc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
