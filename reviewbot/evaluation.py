"""`reviewbot eval`: precision and recall of reviews against a golden set (pure but for reading
files; the judge is passed in).

Golden set (a contract other tools write too): `DIR/<case>/change.diff` and
`DIR/<case>/golden.json` = `{"id", "comments": [{"path", "line", "end_line"?, "side", "body",
"severity"?, "category"?}]}`. Results: `RESULTS/<case>.json`, the object `reviewbot review
--output json` prints.

Matching: same path and side, and the finding's range widened by `window` lines on each side
overlaps the golden range; each golden comment matches at most one finding and each finding at
most one golden comment, greedily by smallest line distance. Figures are micro-averaged over
all cases, and given per case. With no findings precision is 1 (nothing wrong was said); with no
golden comments recall is 1 (nothing was missed).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewbot.errors import UsageError

SIDES = ("new", "old")


@dataclass(frozen=True)
class Comment:
    """A golden comment or a finding: where it is, and what it says."""

    path: str
    line: int
    side: str
    end_line: int | None = None
    body: str = ""
    title: str = ""
    severity: str | None = None
    category: str | None = None

    @property
    def last(self) -> int:
        return max(self.end_line or self.line, self.line)


@dataclass(frozen=True)
class Case:
    id: str
    diff: Path
    comments: list[Comment]


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
    pairs: list[tuple[Comment, Comment]]  # (finding, golden comment), line-matched
    judged: Score | None = None


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
    lines: Score = field(default_factory=Score)
    judged: Score | None = None
    cases: list[CaseScore] = field(default_factory=list)

    def intervals(self) -> dict[str, Interval]:
        return intervals([c.lines for c in self.cases])

    def to_dict(self) -> dict[str, Any]:
        out = self.lines.to_dict()
        out["interval_90"] = {name: [round(lo, 4), round(hi, 4)]
                              for name, (lo, hi) in self.intervals().items()}
        if self.judged is not None:
            out["judged"] = self.judged.to_dict()
        out["cases"] = [{"id": c.id, **c.lines.to_dict(),
                         **({"judged": c.judged.to_dict()} if c.judged is not None else {})}
                        for c in self.cases]
        return out


# --- reading -------------------------------------------------------------------------------

def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def comment(item: Any, where: str) -> Comment:
    """A golden comment or a finding from JSON, or a one-line usage error saying what is wrong."""
    if not isinstance(item, dict):
        raise UsageError(f"{where}: not an object")
    path, line, side = item.get("path"), item.get("line"), item.get("side", "new")
    end = item.get("end_line")
    if not isinstance(path, str) or not path or not isinstance(line, int) or not _int(line) \
            or side not in SIDES or (end is not None and not _int(end)):
        raise UsageError(f"{where}: needs a path, a line >= 1, side new|old and an optional "
                         "end_line >= 1")
    text = {k: item.get(k) if isinstance(item.get(k), str) else None
            for k in ("body", "title", "severity", "category")}
    return Comment(path, line, side, end, text["body"] or "", text["title"] or "",
                   text["severity"], text["category"])


def load_golden(root: Path) -> list[Case]:
    if not root.is_dir():
        raise UsageError(f"golden set {root} is not a directory")
    cases = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        gold, diff = folder / "golden.json", folder / "change.diff"
        if not gold.is_file() or not diff.is_file():
            raise UsageError(f"golden case {folder} needs change.diff and golden.json")
        data = _json(gold)
        if not isinstance(data, dict) or not isinstance(data.get("comments"), list):
            raise UsageError(f"{gold}: needs an object with a comments list")
        case_id = data.get("id", folder.name)
        if case_id != folder.name:
            raise UsageError(f"{gold}: id {case_id!r} differs from its folder {folder.name!r}")
        cases.append(Case(folder.name, diff, [comment(c, f"{gold} comment {i}")
                                              for i, c in enumerate(data["comments"], 1)]))
    if not cases:
        raise UsageError(f"golden set {root} has no cases")
    return cases


def load_findings(results: Path, case_id: str) -> list[Comment]:
    """The findings of `RESULTS/<case>.json`; findings without a line cannot match and count as
    findings all the same."""
    path = results / f"{case_id}.json"
    if not path.is_file():
        raise UsageError(f"no result for case {case_id}: {path} is missing")
    data = _json(path)
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise UsageError(f"{path}: not the output of reviewbot review --output json")
    out = []
    for i, item in enumerate(data["findings"], 1):
        if isinstance(item, dict) and item.get("line") is None:
            out.append(Comment(str(item.get("path", "")), 0, "file"))
        else:
            out.append(comment(item, f"{path} finding {i}"))
    return out


# --- matching ------------------------------------------------------------------------------

def match(findings: list[Comment], golden: list[Comment],
          window: int) -> list[tuple[Comment, Comment]]:
    """One-to-one pairs, greedily by smallest line distance (ties in input order)."""
    candidates = []
    for i, f in enumerate(findings):
        for j, g in enumerate(golden):
            if f.path == g.path and f.side == g.side and f.line - window <= g.last \
                    and g.line <= f.last + window:
                distance = max(0, g.line - f.last, f.line - g.last)
                candidates.append((distance, i, j))
    used_f: set[int] = set()
    used_g: set[int] = set()
    pairs = []
    for _, i, j in sorted(candidates):
        if i not in used_f and j not in used_g:
            used_f.add(i)
            used_g.add(j)
            pairs.append((findings[i], golden[j]))
    return pairs


Judge = Callable[[Comment, Comment], bool]  # do the finding and the golden comment agree?


def score(cases: list[Case], results: Path, window: int, judge: Judge | None = None) -> Report:
    report = Report(judged=Score() if judge is not None else None)
    for case in cases:
        findings = load_findings(results, case.id)
        pairs = match(findings, case.comments, window)
        lines = Score(len(findings), len(case.comments), len(pairs))
        judged = None
        if judge is not None and report.judged is not None:
            judged = Score(len(findings), len(case.comments), sum(judge(f, g) for f, g in pairs))
            report.judged.add(judged)
        report.lines.add(lines)
        report.cases.append(CaseScore(case.id, lines, pairs, judged))
    return report


def render_text(report: Report, cost: dict[str, Any] | None = None) -> str:
    def row(name: str, s: Score) -> str:
        return (f"{name:<32} P {s.precision:6.1%}  R {s.recall:6.1%}  F1 {s.f1:6.1%}  "
                f"({s.matched} matched, {s.findings} findings, {s.golden} golden)")

    out = [row(c.id, c.lines) for c in report.cases]
    out.append(row("all cases (line match)", report.lines))
    out.append(f"{'90% intervals (bootstrap)':<32} " + "  ".join(
        f"{name} {lo:.1%}–{hi:.1%}" for name, (lo, hi) in report.intervals().items()))
    if report.judged is not None:
        out.append(row("all cases (line match + judge)", report.judged))
    if cost:
        out.append("cost: " + ", ".join(f"{k} {v}" for k, v in cost.items()))
    return "\n".join(out) + "\n"
