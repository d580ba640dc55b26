"""`reviewbot eval run` and `eval score` as processes, against a scripted model that knows some
answers of the golden set in tests/eval/planted (real click bug fixes, reverted): progress,
resume, repeat, not-reviewed cases listed and never scored, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from reviewbot.evaluation import load_golden, score
from tests.canaries import API_KEY, PASSWORD, assert_no_canary, echo_finding, echoed, with_password
from tests.conftest import TINY_FORMAT
from tests.eval_support import click_cases, result_json  # noqa: F401 - fixture "click"
from tests.fake_openai import FakeOpenAI, Reply, asked

ROOT = Path(__file__).parents[2]
ANSWERS = {
    'elif default_value == "":': ("Compares any default with a string", "bug"),
    "command=self.ctx.command_path, option=self.ctx.help_option_names[0]":
        ("Hint may name a shadowed help option", "bug"),
    # on the removed line: the golden comment is on the new side, so no match
    'already_bracketed = var.startswith("[")': ("Wrong side", "bug"),
    "variable is used for the parameter": ("Docstring indentation", "maintainability"),
}
FALSE_POSITIVE = "Docstring indentation"


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
    return subprocess.run([sys.executable, "-m", "reviewbot", "eval", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT, check=False)


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
    forced = asked(body)
    if forced == "verify_findings":
        text = body["messages"][-1]["content"]
        ids = re.findall(r"^\[(\d+)\] .*\ntitle: (.*)$", text, re.MULTILINE)
        return Reply(tool_name="verify_findings", tool_args={"verdicts": {
            i: {"reason": "checked", "keep": title != FALSE_POSITIVE,
                "severity": "major", "confidence": 0.9} for i, title in ids}})
    if forced == "same_problem":
        text = body["messages"][-1]["content"]
        return Reply(tool_name="same_problem",
                     tool_args={"reason": "r", "same": "shadowed" in text})
    findings = []
    for row, code in _rows_and_code(body["messages"][1]["content"]):
        for needle, (title, category) in ANSWERS.items():
            if needle in code:
                findings.append({"row": int(row), "title": title, "body": "because",
                                 "category": category, "severity": "major", "confidence": 0.9})
    answer = {"summary": "", "findings": findings}
    if not body.get("tools"):  # findings_format json: a free answer, prose around the object
        return Reply(content=f"My review:\n```json\n{json.dumps(answer)}\n```")
    if body.get("tool_choice") == "none":  # two-step's first request: a review in words
        return Reply(content="\n".join(f"Row {f['row']}: {f['title']}." for f in findings)
                     or "Nothing is wrong here.")
    return Reply(tool_args=answer)


def test_eval_run_reviews_every_case_and_scores_exactly(tmp_path: Path, click: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        plain = _cli("run", "--golden", str(click), "--results", str(tmp_path / "plain"),
                     "--base-url", server.base_url, "--no-verify", "--output", "json",
                     "--config", "/dev/null")
        verified = _cli("run", "--golden", str(click), "--results", str(tmp_path / "ver"),
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


@pytest.mark.parametrize("output", ["text", "json"])
def test_no_secret_reaches_evals_output_or_results_in_any_case_or_cut(
        tmp_path: Path, click: Path, output: str) -> None:
    def echo(body: dict[str, Any], n: int) -> Reply:
        return echo_finding(_rows_and_code(body["messages"][1]["content"])[0][0],
                            echoed(API_KEY, PASSWORD))

    with FakeOpenAI(echo, max_model_len=16000) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "eval", "run", "--golden", str(click),
             "--results", str(tmp_path / "out"), "--no-verify", "--output", output,
             "--config", "/dev/null"], capture_output=True, text=True, timeout=300, cwd=ROOT,
            env={**env, "REVIEWBOT_API_KEY": API_KEY,
                 "REVIEWBOT_BASE_URL": with_password(server.base_url)}, check=False)
    assert proc.returncode == 0, proc.stderr
    results = "".join(p.read_text() for p in (tmp_path / "out").glob("*.json"))
    assert "title " in results  # the findings were written, scrubbed
    assert_no_canary(proc.stdout + proc.stderr + results, API_KEY, PASSWORD)


def test_eval_run_compare_scores_each_variant_with_intervals(tmp_path: Path,
                                                              click: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        proc = _cli("run", "--golden", str(click), "--results", str(tmp_path), "--compare",
                    "--base-url", server.base_url, "--output", "json", "--config", "/dev/null",
                    *[a for v in ("tool+verify", "tool", "json+verify", "json", "reason",
                                  "reason+verify", "two-step", "two-step+verify")
                      for a in ("--variant", v)])
        text = _cli("score", "--golden", str(click), "--results", str(tmp_path / "json"))
    assert proc.returncode == 0, proc.stderr
    variants = {v["variant"]: v for v in json.loads(proc.stdout)["variants"]}
    assert list(variants) == ["tool+verify", "tool", "reason+verify", "reason",
                              "two-step+verify", "two-step", "json+verify", "json"]
    # the scripted model says the same every way; verification drops its false positive
    for name in ("tool", "json", "reason", "two-step"):
        assert (variants[name]["findings"], variants[name]["matched"]) == (4, 2)
        assert (variants[f"{name}+verify"]["findings"], variants[f"{name}+verify"]["matched"]) \
            == (3, 2)
    for v in variants.values():
        assert v["cost"]["unusable_share"] == 0 and v["cost"]["incomplete_cases"] == 0
        for figure in ("precision", "recall", "f1"):
            low, high = v["interval_90"][figure]
            assert 0 <= low <= v[figure] <= high <= 1
        assert v["interval_90"]["recall"][0] < v["interval_90"]["recall"][1]
    assert (tmp_path / "json" / "click-help-hint.json").is_file()
    assert "90% intervals (bootstrap)" in text.stdout


def test_eval_score_text_output(tmp_path: Path, click: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        ran = _cli("run", "--golden", str(click), "--results", str(tmp_path),
                   "--base-url", server.base_url, "--no-verify", "--config", "/dev/null")
    assert ran.returncode == 0, ran.stderr
    scored = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert scored.returncode == 0, scored.stderr
    lines = scored.stdout.strip().splitlines()
    total = next(line for line in lines if line.startswith("all reviewed cases (line match)"))
    spread = lines[lines.index(total) + 1]
    assert "P  50.0%" in total and "R  50.0%" in total
    assert "reviewed 5 of 5 cases" in scored.stdout
    assert spread.startswith("90% intervals (bootstrap)") and "recall 0.0%–100.0%" in spread


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


def test_no_result_at_all_is_one_line_and_exit_2(tmp_path: Path, click: Path) -> None:
    proc = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert proc.returncode == 2 and "no case of the golden set has a complete review" \
        in proc.stderr and "(5 not reviewed)" in proc.stderr


def test_a_missing_or_incomplete_review_is_listed_never_scored_and_exits_3(
        tmp_path: Path, click: Path) -> None:
    hit = {"path": "src/click/core.py", "line": 3114, "side": "new", "severity": "major"}
    (tmp_path / "click-default-str-check.json").write_text(json.dumps(result_json([hit])))
    (tmp_path / "click-docstring-rewrap.json").write_text(json.dumps(result_json([])))
    # incomplete: its empty findings list is no evidence that nothing is wrong
    (tmp_path / "click-help-hint.json").write_text(json.dumps(result_json([], complete=False)))
    report = score(load_golden(click), tmp_path, window=3)
    assert report.reviewed == 2 and report.total == 5
    assert dict(report.not_reviewed) == {"click-help-hint": "chunk 1: HTTP 503",
                                         "click-clirunner-reset": "no result",
                                         "click-double-bracket": "no result"}
    # the golden comments of unreviewed cases are not counted as missed
    assert (report.lines.golden, report.lines.matched, report.lines.recall) == (1, 1, 1.0)
    text = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert text.returncode == 3
    assert "reviewed 2 of 5 cases (3 not reviewed: not scored)" in text.stdout
    assert "click-help-hint" in text.stdout and "not reviewed: chunk 1: HTTP 503" in text.stdout
    doc = json.loads(_cli("score", "--golden", str(click), "--results", str(tmp_path),
                          "--output", "json").stdout)
    assert (doc["cases_total"], doc["cases_reviewed"], len(doc["not_reviewed"])) == (5, 2, 3)
    # the bug-free docstring case is the one clean change: no finding on it
    assert doc["clean"] == {"cases": 1, "findings_per_change": 0, "serious_per_change": 0}
    assert doc["recall_by_size"]["1-50"]["recall"] == 1.0
    assert doc["tokens_per_case"] == 120 and doc["seconds_per_case"] == 2.5


def test_eval_run_against_the_real_vllm(vllm_server, tmp_path: Path, click: Path) -> None:
    """The whole loop on the real server (a random-weight model: the figures mean nothing, the
    contract does): every case reviewed completely, scored, with its cost."""
    proc = _cli("run", "--golden", str(click), "--results", str(tmp_path), "--base-url",
                vllm_server.base_url, "--output", "json", "--max-context", "8192",
                "--config", "/dev/null", *TINY_FORMAT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["golden"] == 4 and len(doc["cases"]) == 5
    assert 0 <= doc["precision"] <= 1 and 0 <= doc["recall"] <= 1
    assert doc["cost"]["incomplete_cases"] == 0 and doc["cost"]["prompt_tokens"] > 0
    for case in doc["cases"]:
        result = json.loads((tmp_path / f"{case['id']}.json").read_text())
        assert result["stats"]["complete"] is True
        assert case["findings"] == len(result["findings"])


def _dying(after: int) -> tuple[list[FakeOpenAI], Any]:
    """A script that answers `after` finding requests, then takes its whole server down (the
    model server dying mid-run: GET /v1/models fails too)."""
    holder: list[FakeOpenAI] = []
    answered = [0]

    def script(body: dict[str, Any], n: int) -> Reply:
        answered[0] += 1
        if answered[0] > after:
            threading.Thread(target=holder[0].__exit__, args=(None, None, None)).start()
            return Reply(status=503, error="going down")
        return _script(body, n)

    return holder, script


def test_a_server_that_dies_mid_run_leaves_the_rest_not_reviewed_and_exits_3(
        tmp_path: Path, click: Path) -> None:
    holder, script = _dying(after=2)
    with FakeOpenAI(script, max_model_len=16000) as server:
        holder.append(server)
        proc = _cli("run", "--golden", str(click), "--results", str(tmp_path), "--base-url",
                    server.base_url, "--no-verify", "--output", "json", "--config", "/dev/null")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["cases_total"], doc["cases_reviewed"]) == (5, 2)
    assert len(doc["not_reviewed"]) == 3 and len(doc["cases"]) == 2
    # the cases after the one that failed were never sent: the server was gone
    assert proc.stderr.count("not reviewed (the model server stopped answering)") == 2
    assert "[3/5] click-docstring-rewrap: 0 finding(s), INCOMPLETE" in proc.stderr
    # their golden comments are not counted as missed: the figures are over reviewed cases
    assert doc["golden"] == sum(c["golden"] for c in doc["cases"])

    # --resume reviews only what is missing, and keeps the rest
    with FakeOpenAI(_script, max_model_len=16000) as server:
        again = _cli("run", "--golden", str(click), "--results", str(tmp_path), "--base-url",
                     server.base_url, "--no-verify", "--output", "json", "--resume",
                     "--config", "/dev/null")
        sent = len(server.requests)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("kept from an earlier run") == 2 and sent == 3
    doc = json.loads(again.stdout)
    assert doc["cases_reviewed"] == 5 and not doc["not_reviewed"]
    assert (doc["findings"], doc["matched"]) == (4, 2) and doc["cost"]["resumed_cases"] == 2


def test_repeat_reports_each_run_the_mean_the_spread_and_a_pooled_interval(
        tmp_path: Path, click: Path) -> None:
    with FakeOpenAI(_script, max_model_len=16000) as server:
        proc = _cli("run", "--golden", str(click), "--results", str(tmp_path), "--base-url",
                    server.base_url, "--no-verify", "--output", "json", "--repeat", "2",
                    "--config", "/dev/null")
        text = _cli("run", "--golden", str(click), "--results", str(tmp_path / "t"),
                    "--base-url", server.base_url, "--no-verify", "--repeat", "2",
                    "--config", "/dev/null")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (tmp_path / "run-1" / "click-help-hint.json").is_file()
    assert (tmp_path / "run-2" / "click-help-hint.json").is_file()
    rep = doc["repeat"]
    assert rep["runs"] == 2 and rep["cases_pooled"] == 5 and len(doc["runs"]) == 1
    # the scripted model answers alike every time: no spread, and the pooled figures agree
    assert rep["recall"] == {"mean": 0.5, "spread": [0.5, 0.5]}
    low, high = rep["interval_90"]["recall"]
    assert low <= 0.5 <= high
    assert "2 runs, 5 cases reviewed in every run; precision mean 50.0%" in text.stdout


def test_a_hostile_result_is_one_visible_line_and_a_special_file_is_refused(
        tmp_path: Path, click: Path) -> None:
    """A results folder or a golden set may come from anyone: a reason with terminal escapes
    and newlines is one visible line; a case whose diff is a link to /dev/zero, or larger
    than the bound, is refused in one line (exit 2), never read until memory runs out."""
    for case in ("click-default-str-check", "click-docstring-rewrap"):
        (tmp_path / f"{case}.json").write_text(json.dumps(result_json([])))
    hostile = result_json([], complete=False)
    hostile["stats"]["errors"] = ["HTTP 500\n\x1b[2J\x1b[31mALL CLEAR\u202e"]
    (tmp_path / "click-help-hint.json").write_text(json.dumps(hostile))
    text = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert text.returncode == 3 and "\x1b" not in text.stdout and "\u202e" not in text.stdout
    (line,) = [x for x in text.stdout.splitlines() if x.startswith("click-help-hint")]
    assert line.endswith("not reviewed: HTTP 500 [2J[31mALL CLEAR")

    diff = click / "click-help-hint" / "change.diff"
    diff.unlink()
    diff.symlink_to("/dev/zero")
    zero = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert zero.returncode == 2 and "is not a regular file" in zero.stderr
    diff.unlink()
    with diff.open("wb") as out:
        out.truncate(65 * 2**20)  # sparse: its size, nothing to read
    huge = _cli("score", "--golden", str(click), "--results", str(tmp_path))
    assert huge.returncode == 2 and "larger than 64 MiB" in huge.stderr
    assert len(huge.stderr.strip().splitlines()) == 1
