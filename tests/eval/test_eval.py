"""`reviewbot eval`: the matching rules, and score/run end to end against a scripted model that
knows some answers of the golden set in tests/eval/golden (real click bug fixes, reverted)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewbot.evaluation import Comment, Score, load_golden, match, score
from tests.fake_openai import FakeOpenAI, Reply

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).parents[2]


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


def test_the_shipped_golden_set_is_valid() -> None:
    cases = {case.id: case for case in load_golden(GOLDEN)}
    assert len(cases) == 5 and cases["click-docstring-rewrap"].comments == []
    assert cases["click-clirunner-reset"].comments[0].side == "old"


def _result(findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"findings": findings, "summary": "", "stats": {}}


def test_score_reads_results_and_micro_averages(tmp_path: Path) -> None:
    hit = {"path": "src/click/core.py", "line": 3114, "side": "new"}  # one line off: in window
    (tmp_path / "click-default-str-check.json").write_text(json.dumps(_result([hit])))
    (tmp_path / "click-docstring-rewrap.json").write_text(json.dumps(_result([
        {"path": "src/click/core.py", "line": 2020, "side": "new"}])))
    for case in ("click-clirunner-reset", "click-help-hint", "click-double-bracket"):
        (tmp_path / f"{case}.json").write_text(json.dumps(_result([])))
    report = score(load_golden(GOLDEN), tmp_path, window=3)
    assert report.to_dict()["matched"] == 1
    assert (report.lines.findings, report.lines.golden) == (2, 4)
    assert report.lines.precision == 0.5 and report.lines.recall == 0.25
    tight = score(load_golden(GOLDEN), tmp_path, window=0)
    assert tight.lines.matched == 0


# --- the command, end to end ----------------------------------------------------------------

def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    return subprocess.run([sys.executable, "-m", "reviewbot", "eval", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT, check=False)


# What the scripted model "knows": for a line of code, the finding it reports there.
ANSWERS = {
    'elif default_value == "":': ("Compares any default with a string", "bug"),
    "command=self.ctx.command_path, option=self.ctx.help_option_names[0]":
        ("Hint may name a shadowed help option", "bug"),
    # on the removed line: the golden comment is on the new side, so no match
    'already_bracketed = var.startswith("[")': ("Wrong side", "bug"),
    "variable is used for the parameter": ("Docstring indentation", "maintainability"),
}
FALSE_POSITIVE = "Docstring indentation"


def _rows_and_code(prompt: str) -> list[tuple[int, str]]:
    """Each added or removed line with the row a model is told to use for it: its own, or for
    a removed line without one, its run's first."""
    out, run = [], 0
    for line in prompt.split("\n"):
        labelled = re.match(r"^([-+])(\d+) (.*)$", line)
        if labelled:
            run = int(labelled.group(2)) if labelled.group(1) == "-" else 0
            out.append((int(labelled.group(2)), labelled.group(3)))
        elif line.startswith("-") and run:
            out.append((run, line[1:]))
        else:
            run = 0
    return out


def _script(body: dict[str, Any], n: int) -> Reply:
    if body["tool_choice"]["function"]["name"] == "verify_findings":
        text = body["messages"][-1]["content"]
        ids = re.findall(r"^\[(\d+)\] .*\ntitle: (.*)$", text, re.MULTILINE)
        return Reply(tool_name="verify_findings", tool_args={"verdicts": [
            {"id": int(i), "reason": "checked", "keep": title != FALSE_POSITIVE,
             "severity": "major", "confidence": 0.9} for i, title in ids]})
    if body["tool_choice"]["function"]["name"] == "same_problem":
        text = body["messages"][-1]["content"]
        return Reply(tool_name="same_problem",
                     tool_args={"reason": "r", "same": "shadowed" in text})
    findings = []
    for row, code in _rows_and_code(body["messages"][1]["content"]):
        for needle, (title, category) in ANSWERS.items():
            if needle in code:
                findings.append({"row": int(row), "title": title, "body": "because",
                                 "category": category, "severity": "major", "confidence": 0.9})
    return Reply(tool_args={"summary": "", "findings": findings})


def test_eval_run_reviews_every_case_and_scores_exactly(tmp_path: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        plain = _cli("run", "--golden", str(GOLDEN), "--results", str(tmp_path / "plain"),
                     "--base-url", server.base_url, "--no-verify", "--output", "json",
                     "--config", "/dev/null")
        verified = _cli("run", "--golden", str(GOLDEN), "--results", str(tmp_path / "ver"),
                        "--base-url", server.base_url, "--output", "json", "--judge",
                        "--config", "/dev/null")
    assert plain.returncode == 0, plain.stderr
    doc = json.loads(plain.stdout)
    # 4 findings: 2 on the golden lines, 1 on the wrong side of the diff, 1 false
    # positive on the bug-free case; 4 golden comments
    assert (doc["findings"], doc["golden"], doc["matched"]) == (4, 4, 2)
    assert (doc["precision"], doc["recall"], doc["f1"]) == (0.5, 0.5, 0.5)
    per_case = {case["id"]: case for case in doc["cases"]}
    assert per_case["click-docstring-rewrap"]["precision"] == 0.0
    assert per_case["click-clirunner-reset"]["recall"] == 0.0
    assert doc["cost"]["requests"] == 5 and doc["cost"]["prompt_tokens"] > 0
    assert doc["cost"]["incomplete_cases"] == 0
    assert json.loads((tmp_path / "plain" / "click-help-hint.json").read_text())["findings"]

    assert verified.returncode == 0, verified.stderr
    doc = json.loads(verified.stdout)
    # verification drops the false positive: 3 findings, still 2 matched
    assert (doc["findings"], doc["matched"]) == (3, 2)
    assert doc["precision"] == round(2 / 3, 4) and doc["f1"] == round(4 / 7, 4)
    # the judge agrees only with the help-hint pair ("shadowed" in both texts)
    assert doc["judged"]["matched"] == 1 and doc["judged"]["precision"] == round(1 / 3, 4)


def test_eval_score_text_output(tmp_path: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        ran = _cli("run", "--golden", str(GOLDEN), "--results", str(tmp_path),
                   "--base-url", server.base_url, "--no-verify", "--config", "/dev/null")
    assert ran.returncode == 0, ran.stderr
    scored = _cli("score", "--golden", str(GOLDEN), "--results", str(tmp_path))
    assert scored.returncode == 0, scored.stderr
    last = scored.stdout.strip().splitlines()[-1]
    assert last.startswith("all cases (line match)") and "P  50.0%" in last and "R  50.0%" in last


@pytest.mark.parametrize("golden, message", [
    ({"comments": [{"path": "a.py", "line": 0, "side": "new", "body": "x"}]}, "line >= 1"),
    ({"comments": [{"path": "a.py", "line": 3, "side": "left", "body": "x"}]}, "side new|old"),
    ({"id": "other", "comments": []}, "differs from its folder"),
    ("not json", "not valid JSON"),
])
def test_a_malformed_golden_set_is_one_line_and_exit_2(tmp_path: Path, golden: Any,
                                                       message: str) -> None:
    case = tmp_path / "gold" / "case"
    case.mkdir(parents=True)
    (case / "change.diff").write_text("")
    (case / "golden.json").write_text(golden if isinstance(golden, str) else json.dumps(golden))
    proc = _cli("score", "--golden", str(tmp_path / "gold"), "--results", str(tmp_path))
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_missing_result_is_named(tmp_path: Path) -> None:
    proc = _cli("score", "--golden", str(GOLDEN), "--results", str(tmp_path))
    assert proc.returncode == 2 and "no result for case click-clirunner-reset" in proc.stderr


def test_eval_run_against_the_real_vllm(vllm_server, tmp_path: Path) -> None:
    """The whole loop on the real server (a random-weight model: the figures mean nothing, the
    contract does): every case reviewed completely, scored, with its cost."""
    proc = _cli("run", "--golden", str(GOLDEN), "--results", str(tmp_path), "--base-url",
                vllm_server.base_url, "--output", "json", "--max-context", "8192",
                "--config", "/dev/null", timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["golden"] == 4 and len(doc["cases"]) == 5
    assert 0 <= doc["precision"] <= 1 and 0 <= doc["recall"] <= 1
    assert doc["cost"]["incomplete_cases"] == 0 and doc["cost"]["prompt_tokens"] > 0
    for case in doc["cases"]:
        result = json.loads((tmp_path / f"{case['id']}.json").read_text())
        assert result["stats"]["complete"] is True
        assert case["findings"] == len(result["findings"])
