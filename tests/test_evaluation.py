"""The evaluation: the matching rules, scores, both golden sets' shape and licences, and scoring
a results folder. The `eval` command as a process: tests/commands/test_eval.py."""

from __future__ import annotations

import json
from pathlib import Path

from reviewbot.diff import Side, parse
from reviewbot.evaluation import Comment, load_golden, match, score
from reviewbot.scores import Score, intervals
from tests.eval_support import click_cases, result_json  # noqa: F401 - fixture "click"

GOLDEN = Path(__file__).parent / "eval" / "planted"
LANGUAGES = {".py": "Python", ".go": "Go", ".ts": "TypeScript", ".java": "Java"}




def c(line: int, end: int | None = None, side: str = "new", path: str = "a.py") -> Comment:
    return Comment(path, line, side, end)


# --- matching -------------------------------------------------------------------------------

def test_a_finding_matches_within_the_window_on_the_same_path_and_side_only() -> None:
    gold = [c(10)]
    assert match([c(13)], gold, 3) and not match([c(14)], gold, 3)
    assert match([c(4, 7)], gold, 3)  # its range widened by 3 reaches line 10
    assert not match([c(10, side="old")], gold, 3) and not match([c(10, path="b.py")], gold, 3)
    assert match([c(12)], [c(5, 9)], 3) and not match([c(13)], [c(5, 9)], 3)


def test_matching_is_one_to_one_and_greedy_by_distance() -> None:
    far, near = c(12), c(10)
    pairs = match([far, near], [c(10), c(14)], 3)
    # near takes line 10 (distance 0); far then takes 14 (distance 2), not 10 (distance 2)
    assert pairs == [(near, c(10)), (far, c(14))]
    assert len(match([c(10), c(10)], [c(10)], 3)) == 1  # a duplicate finding matches once


def test_scores_and_their_edge_cases() -> None:
    s = Score(findings=3, golden=4, matched=2)
    assert (s.precision, s.recall) == (2 / 3, 0.5) and abs(s.f1 - 4 / 7) < 1e-12
    assert Score(0, 2, 0).precision == 1.0 and Score(0, 2, 0).f1 == 0.0
    assert Score(1, 0, 0).recall == 1.0 and Score(1, 0, 0).precision == 0.0


def test_the_shipped_golden_set_is_valid(click: Path) -> None:
    cases = {case.id: case for case in load_golden(click)}
    assert len(cases) == 5 and cases["click-docstring-rewrap"].comments == []
    assert cases["click-clirunner-reset"].comments[0].side == "old"


def test_the_golden_set_is_30_real_changes_in_four_languages_each_comment_on_a_changed_line() -> None:
    cases = load_golden(GOLDEN)
    readme = (GOLDEN / "README.md").read_text(encoding="utf-8")
    assert len(cases) >= 30
    languages: dict[str, int] = {}
    for case in cases:
        assert f"| {case.id} |" in readme, f"{case.id} is not in the README's table"
        changes = parse(case.diff.read_bytes())
        for comment in case.comments:
            file = changes.file(comment.path)
            assert file is not None, f"{case.id}: {comment.path} is not in its diff"
            line = file.line_at(Side(comment.side), comment.line)
            assert line is not None and line.changed, f"{case.id}: {comment.line} is not changed"
            language = LANGUAGES[Path(comment.path).suffix]
            languages[language] = languages.get(language, 0) + 1
    assert set(languages) == set(LANGUAGES.values()) and min(languages.values()) >= 6




def test_score_reads_results_and_micro_averages(tmp_path: Path, click: Path) -> None:
    hit = {"path": "src/click/core.py", "line": 3114, "side": "new"}  # one line off: in window
    (tmp_path / "click-default-str-check.json").write_text(json.dumps(result_json([hit])))
    (tmp_path / "click-docstring-rewrap.json").write_text(json.dumps(result_json([
        {"path": "src/click/core.py", "line": 2020, "side": "new"}])))
    for case in ("click-clirunner-reset", "click-help-hint", "click-double-bracket"):
        (tmp_path / f"{case}.json").write_text(json.dumps(result_json([])))
    report = score(load_golden(click), tmp_path, window=3)
    assert report.to_dict()["matched"] == 1
    assert (report.lines.findings, report.lines.golden) == (2, 4)
    assert report.lines.precision == 0.5 and report.lines.recall == 0.25
    tight = score(load_golden(click), tmp_path, window=0)
    assert tight.lines.matched == 0





# What the scripted model "knows": for a line of code, the finding it reports there.












def test_bootstrap_intervals_are_seeded_and_collapse_when_every_case_agrees() -> None:
    same = [Score(2, 2, 1)] * 10
    assert intervals(same) == {"precision": (0.5, 0.5), "recall": (0.5, 0.5), "f1": (0.5, 0.5)}
    mixed = [Score(1, 1, 1), Score(1, 1, 0), Score(2, 1, 1), Score(0, 1, 0)] * 3
    assert intervals(mixed) == intervals(mixed) != intervals(mixed, seed=1)
    low, high = intervals(mixed)["recall"]
    assert low < sum(s.matched for s in mixed) / sum(s.golden for s in mixed) < high












# --- an eval a team can trust: incomplete runs, resume, repeats ------------------------------







def test_the_real_set_is_changes_as_written_with_licences_and_clean_changes() -> None:
    """tests/eval/real: >= 60 bug-introducing changes of 20-2,000 changed lines, >= 15 clean
    ones, >= 4 languages, each repository's licence recorded, every golden comment on lines the
    case's own diff adds (where the later fix changed them)."""
    import tomllib

    real = Path(__file__).parent / "eval" / "real"
    sources = tomllib.loads((real / "sources.toml").read_text(encoding="utf-8"))
    licences = {r["name"]: r for r in sources["repo"]}
    cases = load_golden(real)
    bugs = [c for c in cases if c.comments]
    assert len(bugs) >= 60 and len(cases) - len(bugs) >= 15
    assert len({r["language"] for r in licences.values()}) >= 4
    assert all(r["licence"] for r in licences.values())
    for case in cases:
        source = json.loads((case.diff.parent / "golden.json").read_text())["source"]
        assert source["repo"] in licences
        assert 20 <= case.size <= 2000
        added = {(f.path, line.new) for f in parse(case.diff.read_bytes()).files
                 for h in f.hunks for line in h.lines if line.kind == "+"}
        for g in case.comments:
            assert g.side == "new" and g.body.startswith("Fixed later by ")
            assert all((g.path, n) in added for n in range(g.line, g.last + 1)), case.id


