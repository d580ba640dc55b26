"""`reviewbot eval score` and `reviewbot eval run`: precision and recall on a golden set, on the
team's own server and model (the format and the matching are in reviewbot/evaluation.py)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from reviewbot import config, diff, evaluation
from reviewbot.commands.review import emit, engine_options
from reviewbot.errors import UsageError
from reviewbot.evaluation import Comment, Judge
from reviewbot.result import Usage


def _judge(settings: config.Settings) -> Judge:
    from reviewbot.engine.build import make_engine

    engine = make_engine(settings)

    def same(finding: Comment, golden: Comment) -> bool:
        deadline = time.monotonic() + settings.review_timeout
        return engine.passes.judge(finding.title, finding.body, golden.body, deadline)

    return same


def _output(report: evaluation.Report, fmt: str, output_file: str | None,
            cost: dict[str, Any] | None = None) -> None:
    if fmt == "json":
        doc = report.to_dict()
        if cost is not None:
            doc["cost"] = cost
        emit(json.dumps(doc, indent=2) + "\n", output_file)
    else:
        emit(evaluation.render_text(report, cost), output_file)


_common = [
    click.option("--golden", "golden_dir", required=True, type=click.Path(path_type=Path),
                 help="The golden set: DIR/<case>/change.diff and golden.json."),
    click.option("--window", type=click.IntRange(min=0), default=3, show_default=True,
                 help="Lines a finding may be off on each side and still match."),
    click.option("--output", "fmt", type=click.Choice(["text", "json"]), default="text",
                 show_default=True),
    click.option("--output-file", help="Write the scores here instead of stdout."),
    click.option("--judge", is_flag=True,
                 help="Also ask the model whether each line-matched pair is the same problem."),
]


def _with_common(command: Any) -> Any:
    for option in reversed(_common):
        command = option(command)
    return command


@click.group(name="eval")
def eval_group() -> None:
    """Measure precision and recall on a golden set."""


@eval_group.command()
@_with_common
@click.option("--results", "results_dir", required=True, type=click.Path(path_type=Path),
              help="DIR/<case>.json: the output of reviewbot review --output json per case.")
@engine_options
def score(golden_dir: Path, results_dir: Path, window: int, fmt: str, output_file: str | None,
          judge: bool, config_path: str | None, **flags: object) -> None:
    """Score existing review results against the golden set."""
    cases = evaluation.load_golden(golden_dir)
    same = _judge(config.resolve(flags, config_path=config_path)) if judge else None
    _output(evaluation.score(cases, results_dir, window, same), fmt, output_file)


# (name, findings_format, verify): `eval run --compare` runs each on the same golden set
VARIANTS = (("tool+verify", "tool", True), ("tool", "tool", False),
            ("json+verify", "json", True), ("json", "json", False))


def _review_all(cases: list[evaluation.Case], settings: config.Settings,
                results: Path) -> dict[str, Any]:
    """Review every case into RESULTS/<case>.json; the cost, and the share of finding-pass
    answers that were unusable (asked for again)."""
    from reviewbot.engine.build import make_engine

    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {results}: {exc.strerror}") from None
    engine = make_engine(settings)
    cost: dict[str, float] = {"requests": 0, "wall_seconds": 0.0, "incomplete_cases": 0,
                              "answers_unusable": 0}
    usage = Usage()
    finding_answers = 0
    for case in cases:
        started = time.monotonic()
        result = engine.review(diff.parse(case.diff.read_bytes()))
        cost["wall_seconds"] += time.monotonic() - started
        s = result.stats
        usage += s.usage
        cost["requests"] += s.requests
        cost["answers_unusable"] += s.answers_unusable
        finding_answers += s.requests - s.verify_requests - s.named_requests
        cost["incomplete_cases"] += not result.complete
        emit(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n",
             str(results / f"{case.id}.json"))
    cost["wall_seconds"] = round(cost["wall_seconds"], 3)
    cost["unusable_share"] = round(cost["answers_unusable"] / finding_answers, 4) \
        if finding_answers else 0.0
    return {**usage.to_dict(), **cost}


def _compare_text(rows: list[tuple[str, evaluation.Report, dict[str, Any]]]) -> str:
    def cell(score: float, bounds: evaluation.Interval) -> str:
        return f"{score:6.1%} [{bounds[0]:.0%}–{bounds[1]:.0%}]"

    head = (f"{'variant':<12} {'precision [90%]':<20} {'recall [90%]':<20} {'F1 [90%]':<20} "
            f"{'unusable':>8} {'wall s':>8}")
    out = [head]
    for name, report, cost in rows:
        bounds, s = report.intervals(), report.lines
        out.append(f"{name:<12} {cell(s.precision, bounds['precision']):<20} "
                   f"{cell(s.recall, bounds['recall']):<20} {cell(s.f1, bounds['f1']):<20} "
                   f"{cost['unusable_share']:>8.1%} {cost['wall_seconds']:>8.0f}")
    return "\n".join(out) + "\n"


@eval_group.command()
@_with_common
@click.option("--results", "results_dir", type=click.Path(path_type=Path),
              help="Where to write DIR/<case>.json (default: ./eval-results).")
@click.option("--compare", is_flag=True,
              help="Run each of tool+verify, tool, json+verify and json (findings_format and "
              "verification) into RESULTS/<variant>/ and compare them.")
@click.option("--variant", "variants", multiple=True,
              type=click.Choice([name for name, _, _ in VARIANTS]),
              help="With --compare: run only this variant (repeatable).")
@engine_options
def run(golden_dir: Path, results_dir: Path | None, window: int, fmt: str,
        output_file: str | None, judge: bool, compare: bool, variants: tuple[str, ...],
        config_path: str | None, **flags: object) -> None:
    """Review every case with this server and model, then score, with the cost."""
    cases = evaluation.load_golden(golden_dir)
    settings = config.resolve(flags, config_path=config_path)
    config.check_paths(settings)
    results = results_dir or Path("eval-results")
    same = _judge(settings) if judge else None
    if variants and not compare:
        raise UsageError("--variant goes with --compare")
    if not compare:
        cost = _review_all(cases, settings, results)
        _output(evaluation.score(cases, results, window, same), fmt, output_file, cost)
        return
    rows = []
    for name, findings_format, verify in VARIANTS:
        if variants and name not in variants:
            continue
        variant = replace(settings, findings_format=findings_format, verify=verify)
        cost = _review_all(cases, variant, results / name)
        rows.append((name, evaluation.score(cases, results / name, window, same), cost))
    if fmt == "json":
        emit(json.dumps({"variants": [{"variant": name, **report.to_dict(), "cost": cost}
                                      for name, report, cost in rows]}, indent=2) + "\n",
             output_file)
    else:
        emit(_compare_text(rows), output_file)
