"""The table of docs/precision.md's real-set section: every variant scored on the same cases.

    python benchmarks/real_set_table.py --golden tests/eval/real \
        --results benchmarks/results/real-set-cpu-24/results \
        [--results MORE] [--window 3] [--out FILE.json]

Each --results folder holds one folder per variant (`tool`, `reason`, ...) of `eval run`
results; several folders are merged (runs that split the cases between them). Only the cases
whose review is complete in every variant are scored, so the variants are compared on the
same changes; how many that is, and how many each variant finished, is printed. Per variant:
precision, recall and F1 with their 90% bootstrap intervals (line match, --window), findings
per clean change (all, and at major or above), the unusable share of finding-pass answers, and
the mean seconds and completion tokens per case.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from reviewbot import evaluation


def merged(folders: list[Path], variant: str, into: Path) -> Path:
    """The variant's results of every folder, linked into one (a later folder wins)."""
    out = into / variant
    out.mkdir(parents=True)
    for folder in folders:
        for result in sorted((folder / variant).glob("*.json")):
            link = out / result.name
            link.unlink(missing_ok=True)
            link.symlink_to(result.resolve())
    return out


def complete(results: Path, cases: list[evaluation.Case]) -> set[str]:
    return {c.id for c in cases
            if (r := evaluation.load_result(results, c.id)) is not None and r.complete}


def cost(results: Path, ids: set[str]) -> dict[str, float]:
    answers = unusable = tokens = seconds = 0.0
    for case_id in ids:
        stats = json.loads((results / f"{case_id}.json").read_text())["stats"]
        answers += stats["requests"] - stats["verify_requests"] - stats["named_requests"]
        unusable += stats["answers_unusable"]
        tokens += stats["completion_tokens"]
        seconds += stats["wall_seconds"]
    n = max(1, len(ids))
    return {"unusable_share": round(unusable / answers, 4) if answers else 0.0,
            "completion_tokens_per_case": round(tokens / n), "seconds_per_case": round(seconds / n)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--golden", type=Path, required=True)
    parser.add_argument("--results", type=Path, action="append", required=True)
    parser.add_argument("--variant", action="append")
    parser.add_argument("--window", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cases = evaluation.load_golden(args.golden)
    variants = args.variant or sorted({p.name for f in args.results for p in f.iterdir()
                                       if p.is_dir()})
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        folders = {v: merged(args.results, v, Path(scratch)) for v in variants}
        finished = {v: complete(folders[v], cases) for v in variants}
        shared = set.intersection(*finished.values())
        if not shared:
            print("no case is complete in every variant", file=sys.stderr)
            return 3
        golden = Path(scratch) / "golden"
        golden.mkdir()
        for case in cases:
            if case.id in shared:
                (golden / case.id).symlink_to(case.diff.parent.resolve())
        same = evaluation.load_golden(golden)
        for v in variants:
            report = evaluation.score(same, folders[v], args.window)
            details, bounds = report.details(), report.intervals()
            rows.append({"variant": v, "finished": len(finished[v]), "scored": report.reviewed,
                         **report.lines.to_dict(),
                         "interval_90": {k: [round(lo, 3), round(hi, 3)]
                                         for k, (lo, hi) in bounds.items()},
                         "clean": details["clean"], **cost(folders[v], shared)})
    bugs = sum(1 for c in same if c.comments)
    print(f"{len(shared)} cases complete in every variant ({bugs} with a golden comment, "
          f"{len(shared) - bugs} clean): {', '.join(sorted(shared))}")
    print("| mode | finished | precision [90%] | recall [90%] | F1 [90%] | findings / clean "
          "change (≥ major) | unusable | s / case | completion tokens / case |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b = r["interval_90"]
        cell = {k: f"{r[k]:.1%} [{b[k][0]:.0%}–{b[k][1]:.0%}]" for k in ("precision", "recall",
                                                                        "f1")}
        print(f"| `{r['variant']}` | {r['finished']} | {cell['precision']} | {cell['recall']} | "
              f"{cell['f1']} | {r['clean']['findings_per_change']:.2f} "
              f"({r['clean']['serious_per_change']:.2f}) | {r['unusable_share']:.1%} | "
              f"{r['seconds_per_case']} | {r['completion_tokens_per_case']} |")
    if args.out:
        args.out.write_text(json.dumps({"cases": sorted(shared), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
