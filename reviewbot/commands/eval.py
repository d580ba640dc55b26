"""`reviewbot eval score` and `reviewbot eval run`: precision and recall on a golden set, on the
team's own server and model (the format and the matching are in reviewbot/evaluation.py)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reviewbot import choices, config, diff, evaluation, scores
from reviewbot.commands.options import emit, engine_options
from reviewbot.errors import BackendError, UsageError
from reviewbot.evaluation import Comment, Judge
from reviewbot.modeltext import clean, one_line
from reviewbot.result import Usage

if TYPE_CHECKING:
    from reviewbot.engine.orchestrator import Engine


def _settings(flags: dict[str, object], config_path: str | None) -> config.Settings:
    """The one rule of reviewbot.flow.trust: in CI, no file of the change's own."""
    from reviewbot.flow.trust import Trust

    return Trust.for_local(flags, config_path).base()


def _judge(settings: config.Settings) -> Judge:
    from reviewbot.engine.build import make_engine

    engine = make_engine(settings)

    def same(finding: Comment, golden: Comment) -> bool:
        deadline = time.monotonic() + settings.review_timeout
        return engine.passes.judge(finding.title, finding.body, golden.body, deadline)

    return same


def _doc(reports: list[scores.Report]) -> dict[str, Any]:
    """The first run's report; with several runs, each run's and their mean and spread."""
    doc = reports[0].to_dict()
    if len(reports) > 1:
        doc["repeat"] = scores.repeated(reports)
        doc["runs"] = [r.to_dict() for r in reports[1:]]
    return doc


def _repeat_text(name: str, reports: list[scores.Report]) -> str:
    if len(reports) < 2:
        return ""
    rep = scores.repeated(reports)
    return (f"{name or 'all runs'}: {rep['runs']} runs, {rep['cases_pooled']} cases reviewed in "
            "every run; " + "; ".join(
                f"{k} mean {rep[k]['mean']:.1%} (runs {rep[k]['spread'][0]:.1%}–"
                f"{rep[k]['spread'][1]:.1%}, pooled 90% {rep['interval_90'][k][0]:.1%}–"
                f"{rep['interval_90'][k][1]:.1%})" for k in ("precision", "recall", "f1"))
            + "\n")


def _output(reports: list[scores.Report], fmt: str, output_file: str | None,
            cost: dict[str, Any] | None = None) -> None:
    if fmt == "json":
        doc = _doc(reports)
        if cost is not None:
            doc["cost"] = cost
        emit(json.dumps(doc, indent=2) + "\n", output_file)
    else:
        emit(scores.render_text(reports[0], cost) + _repeat_text("", reports), output_file)


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
    """Score existing review results against the golden set: the cases with a complete review;
    the others are listed as not reviewed and the command exits 3."""
    cases = evaluation.load_golden(golden_dir)
    same = _judge(_settings(flags, config_path)) if judge else None
    report = evaluation.score(cases, results_dir, window, same)
    _output([report], fmt, output_file)
    if report.not_reviewed:  # the figures are over the finished cases only
        raise SystemExit(3)


# (name, findings_format, verify): `eval run --compare` runs each on the same golden set
VARIANTS = tuple((f"{mode}{'+verify' if verify else ''}", mode, verify)
                 for mode in choices.FINDINGS_FORMATS for verify in (True, False))


def _answering(engine: Engine) -> bool:
    """Whether the model server still answers GET /v1/models (asked after an incomplete case:
    when it is gone, every case left would fail alike and is left for --resume)."""
    try:
        engine.client.discover(engine.model)
    except BackendError:
        return False
    return True


def _review_all(cases: list[evaluation.Case], settings: config.Settings, results: Path,
                resume: bool = False) -> dict[str, Any]:
    """Review every case into RESULTS/<case>.json, with a line of progress per case on stderr;
    with `resume`, a case whose result there is complete is kept, not reviewed again. The
    cost, and the share of finding-pass answers that were unusable (asked for again)."""
    from reviewbot.engine.build import make_engine

    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {results}: {exc.strerror}") from None
    engine = make_engine(settings)
    cost: dict[str, float] = {"requests": 0, "wall_seconds": 0.0, "incomplete_cases": 0,
                              "answers_unusable": 0, "resumed_cases": 0}
    usage = Usage()
    finding_answers = 0
    gone = False
    for number, case in enumerate(cases, 1):
        where = f"[{number}/{len(cases)}] {case.id}"
        if resume and (done := evaluation.load_result(results, case.id)) and done.complete:
            cost["resumed_cases"] += 1
            click.echo(f"{where}: kept from an earlier run", err=True)
            continue
        if gone:
            click.echo(f"{where}: not reviewed (the model server stopped answering)", err=True)
            (results / f"{case.id}.json").unlink(missing_ok=True)
            cost["incomplete_cases"] += 1
            continue
        started = time.monotonic()
        result = engine.review(diff.parse(evaluation.bounded(case.diff)))
        cost["wall_seconds"] += time.monotonic() - started
        s = result.stats
        usage += s.usage
        cost["requests"] += s.requests
        cost["answers_unusable"] += s.answers_unusable
        finding_answers += s.requests - s.verify_requests - s.named_requests
        cost["incomplete_cases"] += not result.complete
        gone = not result.complete and not _answering(engine)
        emit(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n",
             str(results / f"{case.id}.json"))
        why = one_line(clean((s.errors or ["?"])[0], 300))  # may quote a server: one line
        state = "complete" if result.complete else f"INCOMPLETE ({why})"
        click.echo(f"{where}: {len(result.findings)} finding(s), {state}, "
                   f"{time.monotonic() - started:.1f} s", err=True)
    cost["wall_seconds"] = round(cost["wall_seconds"], 3)
    cost["unusable_share"] = round(cost["answers_unusable"] / finding_answers, 4) \
        if finding_answers else 0.0
    return {**usage.to_dict(), **cost}


def _compare_text(rows: list[tuple[str, scores.Report, dict[str, Any]]]) -> str:
    def cell(score: float, bounds: scores.Interval) -> str:
        return f"{score:6.1%} [{bounds[0]:.0%}–{bounds[1]:.0%}]"

    head = (f"{'variant':<16} {'reviewed':>9} {'precision [90%]':<20} {'recall [90%]':<20} "
            f"{'F1 [90%]':<20} {'unusable':>8} {'wall s':>8}")
    out = [head]
    for name, report, cost in rows:
        bounds, s = report.intervals(), report.lines
        out.append(f"{name:<16} {f'{report.reviewed}/{report.total}':>9} "
                   f"{cell(s.precision, bounds['precision']):<20} "
                   f"{cell(s.recall, bounds['recall']):<20} {cell(s.f1, bounds['f1']):<20} "
                   f"{cost['unusable_share']:>8.1%} {cost['wall_seconds']:>8.0f}")
    return "\n".join(out) + "\n"


@eval_group.command()
@_with_common
@click.option("--results", "results_dir", type=click.Path(path_type=Path),
              help="Where to write DIR/<case>.json (default: ./eval-results).")
@click.option("--compare", is_flag=True,
              help="Run each variant (findings_format x verification) into RESULTS/<variant>/ "
              "and compare them.")
@click.option("--variant", "variants", multiple=True,
              type=click.Choice([name for name, _, _ in VARIANTS]),
              help="With --compare: run only this variant (repeatable).")
@click.option("--resume", is_flag=True,
              help="Keep the complete results already in RESULTS; review only the rest.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Review every case N times (RESULTS/run-<i>/): mean, spread and a pooled "
              "interval.")
@engine_options
def run(golden_dir: Path, results_dir: Path | None, window: int, fmt: str,
        output_file: str | None, judge: bool, compare: bool, variants: tuple[str, ...],
        resume: bool, repeat: int, config_path: str | None, **flags: object) -> None:
    """Review every case with this server and model, then score, with the cost. A case whose
    review is incomplete is listed as not reviewed, never scored, and the run exits 3."""
    cases = evaluation.load_golden(golden_dir)
    settings = _settings(flags, config_path)
    config.check_paths(settings)
    results = results_dir or Path("eval-results")
    same = _judge(settings) if judge else None
    if variants and not compare:
        raise UsageError("--variant goes with --compare")
    chosen = [(name, replace(settings, findings_format=mode, verify=verify))
              for name, mode, verify in VARIANTS if not variants or name in variants] \
        if compare else [("", settings)]
    rows = []
    for name, variant in chosen:
        folder = results / name if name else results
        runs = [folder / f"run-{i}" for i in range(1, repeat + 1)] if repeat > 1 else [folder]
        reports, costs = [], []
        for i, where in enumerate(runs, 1):
            if len(runs) > 1 or name:
                click.echo(f"{name or 'run'}{f' run {i} of {len(runs)}' if len(runs) > 1 else ''}"
                           f": {where}", err=True)
            costs.append(_review_all(cases, variant, where, resume))
            reports.append(evaluation.score(cases, where, window, same))
        rows.append((name, reports, _total(costs)))
    complete = all(r.reviewed == r.total for _, reports, _ in rows for r in reports)
    if compare:
        _compare_output(rows, fmt, output_file)
    else:
        _, reports, cost = rows[0]
        _output(reports, fmt, output_file, cost)
    if not complete:
        raise SystemExit(3)


def _total(costs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {k: round(sum(c[k] for c in costs), 4) for k in costs[0] if k != "unusable_share"}
    out["unusable_share"] = round(sum(c["unusable_share"] for c in costs) / len(costs), 4)
    return out


def _compare_output(rows: list[tuple[str, list[scores.Report], dict[str, Any]]], fmt: str,
                    output_file: str | None) -> None:
    if fmt == "json":
        emit(json.dumps({"variants": [{"variant": name, **_doc(reports), "cost": cost}
                                      for name, reports, cost in rows]}, indent=2) + "\n",
             output_file)
    else:
        emit(_compare_text([(name, reports[0], cost) for name, reports, cost in rows])
             + "".join(_repeat_text(name, reports) for name, reports, _ in rows), output_file)
