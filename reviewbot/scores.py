"""The figures of `reviewbot eval` (pure): precision, recall and F1 micro-averaged over the
reviewed cases, their bootstrap intervals, the details (recall by size and category, false
positives per clean change, cost per case), repeated runs, and the text report."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

SERIOUS = ("blocker", "critical", "major")  # a false positive a team would have to answer
SIZES = ((50, "1-50"), (200, "51-200"), (500, "201-500"), (None, "over 500"))


@dataclass
class Score:
    findings: int = 0
    golden: int = 0
    matched: int = 0  # findings matched; equal to golden comments matched (one to one)

    @property
    def precision(self) -> float:
        return self.matched / self.findings if self.findings else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.golden if self.golden else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def add(self, other: Score) -> None:
        self.findings += other.findings
        self.golden += other.golden
        self.matched += other.matched

    def to_dict(self) -> dict[str, Any]:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4),
                "f1": round(self.f1, 4), "findings": self.findings, "golden": self.golden,
                "matched": self.matched}


@dataclass
class CaseScore:
    id: str
    lines: Score
    judged: Score | None = None
    size: int = 0  # changed lines of the diff
    serious: int = 0  # findings at major or above
    categories: dict[str, tuple[int, int]] = field(default_factory=dict)
    tokens: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, **self.lines.to_dict(), "changed_lines": self.size,
                "serious_findings": self.serious, "tokens": self.tokens,
                "seconds": round(self.seconds, 3),
                **({"judged": self.judged.to_dict()} if self.judged is not None else {})}


def _bucket(size: int) -> str:
    return next(name for bound, name in SIZES if bound is None or size <= bound)


Interval = tuple[float, float]
RESAMPLES = 2000
CONFIDENCE = 0.9


def intervals(cases: list[Score], resamples: int = RESAMPLES,
              seed: int = 0) -> dict[str, Interval]:
    """Bootstrap CONFIDENCE intervals of micro-averaged precision, recall and F1: the cases
    drawn with replacement `resamples` times (the case is the unit: its findings are not
    independent of each other), the percentile bounds of the figures; seeded, so reproducible."""
    draw = random.Random(seed)
    figures: dict[str, list[float]] = {"precision": [], "recall": [], "f1": []}
    for _ in range(resamples if cases else 0):
        total = Score()
        for case in draw.choices(cases, k=len(cases)):
            total.add(case)
        for name, values in figures.items():
            values.append(getattr(total, name))
    tail = (1 - CONFIDENCE) / 2

    def bounds(values: list[float]) -> Interval:
        values.sort()
        if not values:
            return (0.0, 0.0)
        return (values[int(tail * (len(values) - 1))], values[int((1 - tail) * (len(values) - 1))])

    return {name: bounds(values) for name, values in figures.items()}


@dataclass
class Report:
    """The scores over the reviewed cases; the cases not reviewed are listed, never scored."""

    lines: Score = field(default_factory=Score)
    judged: Score | None = None
    cases: list[CaseScore] = field(default_factory=list)
    not_reviewed: list[tuple[str, str]] = field(default_factory=list)  # (case, why)

    @property
    def reviewed(self) -> int:
        return len(self.cases)

    @property
    def total(self) -> int:
        """Cases in the golden set: the scored and the not reviewed."""
        return self.reviewed + len(self.not_reviewed)

    def intervals(self) -> dict[str, Interval]:
        return intervals([c.lines for c in self.cases])

    def details(self) -> dict[str, Any]:
        """Recall by diff size and by golden category, false positives per clean change (a
        case with no golden comment), tokens and seconds per case."""
        sizes: dict[str, list[int]] = {name: [0, 0, 0] for _, name in SIZES}
        for c in self.cases:
            if c.lines.golden:
                bucket = sizes[_bucket(c.size)]
                bucket[0] += 1
                bucket[1] += c.lines.golden
                bucket[2] += c.lines.matched
        categories: dict[str, list[int]] = {}
        for c in self.cases:
            for name, (total, matched) in c.categories.items():
                entry = categories.setdefault(name, [0, 0])
                entry[0] += total
                entry[1] += matched
        clean = [c for c in self.cases if not c.lines.golden]
        n = len(self.cases) or 1
        return {
            "recall_by_size": {name: {"cases": k, "golden": g, "matched": m,
                                      "recall": round(m / g, 4)}
                               for name, (k, g, m) in sizes.items() if g},
            "recall_by_category": {name: {"golden": g, "matched": m, "recall": round(m / g, 4)}
                                   for name, (g, m) in sorted(categories.items())},
            "clean": {"cases": len(clean),
                      "findings_per_change": round(
                          sum(c.lines.findings for c in clean) / len(clean), 4) if clean else 0,
                      "serious_per_change": round(
                          sum(c.serious for c in clean) / len(clean), 4) if clean else 0},
            "tokens_per_case": round(sum(c.tokens for c in self.cases) / n, 1),
            "seconds_per_case": round(sum(c.seconds for c in self.cases) / n, 3),
        }

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cases_total": self.total, "cases_reviewed": self.reviewed,
                               "not_reviewed": [{"id": i, "reason": why}
                                                for i, why in self.not_reviewed],
                               **self.lines.to_dict()}
        out["interval_90"] = {name: [round(lo, 4), round(hi, 4)]
                              for name, (lo, hi) in self.intervals().items()}
        if self.judged is not None:
            out["judged"] = self.judged.to_dict()
        out.update(self.details())
        out["cases"] = [c.to_dict() for c in self.cases]
        return out


def repeated(reports: list[Report]) -> dict[str, Any]:
    """N runs of the same golden set: the mean and spread (lowest, highest) of each figure over
    the runs, and the bootstrap interval over the cases with every run's findings pooled per
    case (run-to-run noise and case-to-case spread in one interval). Only cases reviewed in
    every run are pooled."""
    everywhere = set.intersection(*({c.id for c in r.cases} for r in reports))
    pooled: dict[str, Score] = {}
    for r in reports:
        for c in r.cases:
            if c.id in everywhere:
                pooled.setdefault(c.id, Score()).add(c.lines)
    out: dict[str, Any] = {"runs": len(reports), "cases_pooled": len(pooled)}
    for name in ("precision", "recall", "f1"):
        values = [getattr(r.lines, name) for r in reports]
        out[name] = {"mean": round(sum(values) / len(values), 4),
                     "spread": [round(min(values), 4), round(max(values), 4)]}
    out["interval_90"] = {name: [round(lo, 4), round(hi, 4)]
                          for name, (lo, hi) in intervals(list(pooled.values())).items()}
    return out


def render_text(report: Report, cost: dict[str, Any] | None = None) -> str:
    def row(name: str, s: Score) -> str:
        return (f"{name:<32} P {s.precision:6.1%}  R {s.recall:6.1%}  F1 {s.f1:6.1%}  "
                f"({s.matched} matched, {s.findings} findings, {s.golden} golden)")

    out = [row(c.id, c.lines) for c in report.cases]
    out += [f"{case_id:<32} not reviewed: {why}" for case_id, why in report.not_reviewed]
    out.append(f"reviewed {report.reviewed} of {report.total} cases"
               + (f" ({len(report.not_reviewed)} not reviewed: not scored)"
                  if report.not_reviewed else ""))
    out.append(row("all reviewed cases (line match)", report.lines))
    out.append(f"{'90% intervals (bootstrap)':<32} " + "  ".join(
        f"{name} {lo:.1%}–{hi:.1%}" for name, (lo, hi) in report.intervals().items()))
    if report.judged is not None:
        out.append(row("all cases (line match + judge)", report.judged))
    details = report.details()
    for bucket, s in details["recall_by_size"].items():
        out.append(f"recall, {bucket + ' changed lines':<24} {s['recall']:6.1%}  "
                   f"({s['matched']} of {s['golden']}, {s['cases']} cases)")
    for name, s in details["recall_by_category"].items():
        out.append(f"recall, category {name:<15} {s['recall']:6.1%}  "
                   f"({s['matched']} of {s['golden']})")
    clean = details["clean"]
    if clean["cases"]:
        out.append(f"false positives per clean change: {clean['findings_per_change']:.2f} "
                   f"({clean['serious_per_change']:.2f} at major or above; "
                   f"{clean['cases']} clean changes)")
    out.append(f"per case: {details['tokens_per_case']:,.0f} tokens, "
               f"{details['seconds_per_case']:.1f} s")
    if cost:
        out.append("cost: " + ", ".join(f"{k} {v}" for k, v in cost.items()))
    return "\n".join(out) + "\n"
