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

    @property
    def size(self) -> int:
        """Changed lines of the case's diff (its size bucket)."""
        with self.diff.open("rb") as lines:
            return sum(1 for line in lines if line[:1] in (b"+", b"-")
                       and not line.startswith((b"+++ ", b"--- ")))


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
    pairs: list[tuple[Comment, Comment]]  # (finding, golden comment), line-matched
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
    total: int = 0  # cases in the golden set
    not_reviewed: list[tuple[str, str]] = field(default_factory=list)  # (case, why)

    @property
    def reviewed(self) -> int:
        return len(self.cases)

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


@dataclass(frozen=True)
class Reviewed:
    """One case's review as `RESULTS/<case>.json` holds it."""

    findings: list[Comment]
    complete: bool
    problem: str  # why the review is incomplete ("" when complete)
    tokens: int  # prompt + completion tokens
    seconds: float


def load_result(results: Path, case_id: str) -> Reviewed | None:
    """The review of a case, or None when there is none (the case was not reviewed). Findings
    without a line cannot match and count as findings all the same."""
    path = results / f"{case_id}.json"
    if not path.is_file():
        return None
    data = _json(path)
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise UsageError(f"{path}: not the output of reviewbot review --output json")
    out = []
    for i, item in enumerate(data["findings"], 1):
        if isinstance(item, dict) and item.get("line") is None:
            out.append(Comment(str(item.get("path", "")), 0, "file"))
        else:
            out.append(comment(item, f"{path} finding {i}"))
    stats: dict[str, Any] = data["stats"] if isinstance(data.get("stats"), dict) else {}
    errors = [e for e in stats.get("errors", []) if isinstance(e, str)]
    complete = stats.get("complete") is True

    def number(key: str) -> float:
        value = stats.get(key, 0)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    return Reviewed(out, complete, "" if complete else (errors[0] if errors else "incomplete"),
                    int(number("prompt_tokens") + number("completion_tokens")),
                    float(number("wall_seconds")))


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
    """Score the cases whose review is in `results` and complete; every other case is listed as
    not reviewed and never scored (an unfinished review is no evidence of a clean change)."""
    report = Report(judged=Score() if judge is not None else None, total=len(cases))
    for case in cases:
        reviewed = load_result(results, case.id)
        if reviewed is None or not reviewed.complete:
            report.not_reviewed.append(
                (case.id, "no result" if reviewed is None else reviewed.problem))
            continue
        findings = reviewed.findings
        pairs = match(findings, case.comments, window)
        lines = Score(len(findings), len(case.comments), len(pairs))
        judged = None
        if judge is not None and report.judged is not None:
            judged = Score(len(findings), len(case.comments), sum(judge(f, g) for f, g in pairs))
            report.judged.add(judged)
        report.lines.add(lines)
        report.cases.append(CaseScore(
            case.id, lines, pairs, judged, size=case.size,
            serious=sum(1 for f in findings if _serious(f.severity)),
            categories=_by_category(case.comments, pairs),
            tokens=reviewed.tokens, seconds=reviewed.seconds))
    if not report.cases:
        raise UsageError(f"no case of the golden set has a complete review in {results} "
                         f"({len(report.not_reviewed)} not reviewed)")
    return report


def _serious(severity: str | None) -> bool:
    return severity in SERIOUS


def _by_category(golden: list[Comment], pairs: list[tuple[Comment, Comment]]
                 ) -> dict[str, tuple[int, int]]:
    """(golden comments, matched) per golden category ("other" where none is given)."""
    found = {id(g) for _, g in pairs}
    out: dict[str, tuple[int, int]] = {}
    for g in golden:
        total, matched = out.get(g.category or "other", (0, 0))
        out[g.category or "other"] = (total + 1, matched + (id(g) in found))
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
