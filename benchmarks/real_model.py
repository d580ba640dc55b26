"""The real demo model (Qwen2.5-Coder-1.5B-Instruct, CPU vLLM) on the golden set: the figures of
docs/precision.md's real-model row and docs/real-model.md (issue 33).

    python benchmarks/real_model.py --url http://127.0.0.1:PORT [--variant tool --variant json]
        [--golden tests/eval/planted] [--out benchmarks/results/real_model] [--max-lines N]
        [--parallel] [--repeat N] [--resume] [--skip CASE]…

`--max-lines N` reviews only the cases whose diff changes at most N lines (a CPU cannot review
the whole real set in a session: the choice is the smallest cases, named in the output);
`--skip CASE` (repeatable) leaves a case out (one that ran into the review timeout before);
`--parallel` runs the variants at once against the one server (vLLM batches their decodes);
`--resume` keeps the complete results of an earlier cut run.

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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import metrics_delta, scrape

from reviewbot import evaluation
from reviewbot_server import realmodel

ROOT = Path(__file__).resolve().parents[1]


def config_file(folder: Path) -> Path:
    path = folder / "real.toml"
    lines = [f"{key} = {json.dumps(value)}" for key, value in realmodel.SETTINGS.items()
             if key not in ("verify", "findings_format")]  # the variant decides
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


def subset(golden: Path, max_lines: int | None, skip: list[str], scratch: Path) -> Path:
    """The golden set, or its cases of at most `max_lines` changed lines and not in `skip`
    (linked, not copied)."""
    if max_lines is None and not skip:
        return golden
    folder = scratch / "subset"
    folder.mkdir()
    for case in evaluation.load_golden(golden):
        if (max_lines is None or case.size <= max_lines) and case.id not in skip:
            (folder / case.id).symlink_to(case.diff.parent.resolve())
    return folder


def run_variant(url: str, golden: Path, variant: str, out: Path, config: Path,
                extra: list[str]) -> dict:
    before = scrape(url)
    started = time.monotonic()
    with (out / f"{variant}.log").open("w", encoding="utf-8") as log:
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "eval", "run", "--golden", str(golden),
             "--results", str(out / "results"), "--compare", "--variant", variant, "--base-url",
             f"{url}/v1", "--config", str(config), "--output", "json", *extra],
            stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT, check=False)
    if proc.returncode not in (0, 3):  # 3: some case not reviewed; scored without it
        raise SystemExit(f"{variant}: eval run exited {proc.returncode}: see {log.name}")
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
    parser.add_argument("--variant", action="append", default=None,
                        help="a findings_format, +verify or not (repeatable)")
    parser.add_argument("--max-lines", type=int)
    parser.add_argument("--skip", action="append", default=[], metavar="CASE")
    parser.add_argument("--parallel", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    extra = ["--repeat", str(args.repeat)] + (["--resume"] if args.resume else [])
    with tempfile.TemporaryDirectory() as scratch:
        config = config_file(Path(scratch))
        golden = subset(args.golden, args.max_lines, args.skip, Path(scratch))
        print(f"cases: {', '.join(sorted(p.name for p in golden.iterdir() if p.is_dir()))}", flush=True)

        def one(variant: str) -> None:
            doc = run_variant(args.url.rstrip("/"), golden, variant, args.out, config, extra)
            (args.out / f"{variant}.json").write_text(json.dumps(doc, indent=1) + "\n",
                                                      encoding="utf-8")
            print(json.dumps(doc), flush=True)

        variants = args.variant or ["tool", "json", "tool+verify", "json+verify"]
        with ThreadPoolExecutor(len(variants) if args.parallel else 1) as pool:
            list(pool.map(one, variants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
