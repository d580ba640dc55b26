"""`reviewbot eval`: precision and recall of reviews against a golden set (pure but for reading
files; the judge is passed in).

Golden set (a contract other tools write too): `DIR/<case>/change.diff` and
`DIR/<case>/golden.json` = `{"id", "comments": [{"path", "line", "end_line"?, "side", "body",
"severity"?, "category"?}]}`. Results: `RESULTS/<case>.json`, the object `reviewbot review
--output json` prints.

Matching: same path and side, and the finding's range widened by `window` lines on each side
overlaps the golden range; each golden comment matches at most one finding and each finding at
most one golden comment, greedily by smallest line distance. Only cases with a complete review
are scored; the rest are listed as not reviewed. Figures are micro-averaged over the scored
cases, and given per case (reviewbot.scores). With no findings precision is 1 (nothing wrong
was said); with no golden comments recall is 1 (nothing was missed).
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewbot.errors import UsageError
from reviewbot.modeltext import clean, one_line
from reviewbot.scores import SERIOUS, CaseScore, Report, Score

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
        return sum(1 for line in bounded(self.diff).split(b"\n") if line[:1] in (b"+", b"-")
                   and not line.startswith((b"+++ ", b"--- ")))


# --- reading -------------------------------------------------------------------------------

MAX_FILE_BYTES = 64 * 2**20  # a golden case's diff, its golden.json, a result


def bounded(path: Path) -> bytes:
    """A regular file's bytes, refused when it is larger than MAX_FILE_BYTES or no regular file
    (a link to /dev/zero, a FIFO): a golden set or a results folder may come from anyone."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise UsageError(f"{path} is not a regular file")
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"{path} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    return data


def _json(path: Path) -> Any:
    try:
        return json.loads(bounded(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"{path} is nested too deep") from None


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
        if not gold.exists() or not diff.exists():
            raise UsageError(f"golden case {folder} needs change.diff and golden.json")
        bounded(diff)  # a regular file of a bounded size, before anything reads it
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

    # the reason may quote a server or a model: one visible line, for any terminal or file
    problem = one_line(clean(errors[0], 300)) if errors else "incomplete"
    return Reviewed(out, complete, "" if complete else problem,
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
    report = Report(judged=Score() if judge is not None else None)
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
            case.id, lines, judged, size=case.size,
            serious=sum(1 for f in findings if f.severity in SERIOUS),
            categories=_by_category(case.comments, pairs),
            tokens=reviewed.tokens, seconds=reviewed.seconds))
    if not report.cases:
        raise UsageError(f"no case of the golden set has a complete review in {results} "
                         f"({len(report.not_reviewed)} not reviewed)")
    return report


def _by_category(golden: list[Comment], pairs: list[tuple[Comment, Comment]]
                 ) -> dict[str, tuple[int, int]]:
    """(golden comments, matched) per golden category ("other" where none is given)."""
    found = {id(g) for _, g in pairs}
    out: dict[str, tuple[int, int]] = {}
    for g in golden:
        total, matched = out.get(g.category or "other", (0, 0))
        out[g.category or "other"] = (total + 1, matched + (id(g) in found))
    return out
