"""Beyond the diff on GitLab, end to end: `reviewbot review --mr` as a real process, the issues
the MR closes read from the fake GitLab's issues APIs, and a real Bandit run's SARIF triaged by
a scripted model; the confirmed result is posted on its line and gates the pipeline."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TINY_FORMAT
from tests.fake_openai import FakeOpenAI, Reply, asked, user_text
from tests.forges.fake_gitlab import FakeGitLab, Fault, State
from tests.forges.gitlab_support import TOKEN
from tests.forges.gitrepo import Repo

APP = '''import subprocess


def run(cmd):
    """Runs what the form sent."""
    return subprocess.call(cmd, shell=True)
'''
OWN_ISSUE = "Run the form's command: the admin page must run it and return its status."
PRIVATE = "SECRET-ROADMAP of another team, never to be shown here"


def _repo(tmp_path: Path) -> tuple[Repo, str, str]:
    repo = Repo(tmp_path / "repo")
    repo.write({"README.md": "app\n"})
    base = repo.commit("base")
    repo.checkout("feature", create=True)
    repo.write({"app.py": APP})
    return repo, base, repo.commit("run commands")


def _bandit(repo: Repo, out: Path) -> None:
    """Bandit as a team's CI job runs it: over the checkout, SARIF out (exit 1: it found some)."""
    proc = subprocess.run([sys.executable, "-m", "bandit", "-q", "-r", ".", "-f", "sarif",
                           "-o", str(out)], cwd=repo.root, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1 and out.is_file(), proc.stderr


def _script(seen: list[dict[str, Any]]) -> Any:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        seen.append(body)
        name = asked(body)
        text = user_text(body)
        if name == "triage_results":
            verdicts = {ident: {"verdict": "real_problem" if rule == "B602" else "false_positive",
                                "reason": "the command comes from a form" if rule == "B602"
                                else "<b>importing</b> subprocess is harmless"}
                        for ident, rule in re.findall(r'<result id="(S\d+)" tool="Bandit" '
                                                      r'rule="(\w+)"', text)}
            return Reply(tool_name=name, tool_args={"verdicts": verdicts})
        if name == "issue_verdicts":
            return Reply(tool_name=name, tool_args={"verdicts": {
                "#12": {"verdict": "partly", "missing": "no status check"}}})
        return Reply(tool_args={"summary": "Runs commands.", "findings": []})
    return script


def _review(state: State, server: FakeOpenAI, cwd: Path, *extra: str
            ) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CI_", "GITLAB", "GITHUB", "REVIEWBOT_"))}
    return subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
         "--gitlab-url", state.url, "--base-url", server.base_url,
         "--no-progress", "--output", "json", "--fail-on", "major", *extra],
        capture_output=True, text=True, timeout=300,
        env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN}, cwd=cwd, check=False)


@pytest.fixture(name="gitlab")
def gitlab_fixture(tmp_path: Path) -> Any:
    repo, base, head = _repo(tmp_path)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        state.description = "Closes #12. Background in other/team#3 and #99."
        state.add_issue(12, "Admin page: run a command", OWN_ISSUE)
        state.add_issue(3, "Roadmap", PRIVATE, project="other/team", project_id=77)
        state.description += " Fixes other/team#3."
        yield state


def test_issue_and_bandit_results_reach_the_review_and_the_gate(gitlab: State,
                                                                tmp_path: Path) -> None:
    sarif = tmp_path / "bandit.sarif"
    _bandit(gitlab.repo, sarif)
    seen: list[dict[str, Any]] = []
    with FakeOpenAI(_script(seen), max_model_len=16000) as server:
        proc = _review(gitlab, server, gitlab.repo.root, "--sarif-in", str(sarif))
    assert proc.returncode == 1, proc.stderr  # the confirmed B602 is major: the gate fails
    out = json.loads(proc.stdout)
    prompts = "\n".join(m["content"] for b in seen for m in b["messages"])
    assert OWN_ISSUE in prompts and "Admin page: run a command" in prompts
    assert "SECRET-ROADMAP" not in prompts  # another project's issue, though GitLab lists it
    chunk = next(user_text(b) for b in seen
                 if asked(b) == "report_findings")
    assert "#12: Admin page: run a command" in chunk  # a finding may cite it
    assert out["linked_issues"] == [{"ref": "#12", "title": "Admin page: run a command",
                                     "verdict": "partly", "missing": "no status check"}]
    (found,) = [f for f in out["findings"] if f["title"].startswith("Bandit B602")]
    assert (found["path"], found["line"], found["category"]) == ("app.py", 6, "security")
    assert out["stats"]["scanner_results"] == 2 and out["stats"]["scanner_confirmed"] == 1
    assert [d["rule"] for d in out["scanner_dismissed"]] == ["B404"]
    (note,) = gitlab.diff_notes()
    assert note["position"]["new_line"] == 6 and "B602" in note["body"]
    (summary,) = [n["body"] for n in gitlab.notes() if not n.get("position")]
    assert "**Linked issues**" in summary and "partly addressed" in summary
    assert "Scanner results dismissed" in summary and "B404" in summary
    assert "<b>" not in summary and "SECRET-ROADMAP" not in summary


def test_a_second_run_finds_the_confirmed_result_posted_and_still_gates(gitlab: State,
                                                                        tmp_path: Path) -> None:
    """The confirmed result is a finding like the model's own: fingerprinted, posted once, and
    counted by the verdict of a Retry."""
    sarif = tmp_path / "bandit.sarif"
    _bandit(gitlab.repo, sarif)
    with FakeOpenAI(_script([]), max_model_len=16000) as server:
        first = _review(gitlab, server, gitlab.repo.root, "--sarif-in", str(sarif))
        again = _review(gitlab, server, gitlab.repo.root, "--sarif-in", str(sarif),
                        "--mode", "full")
    assert first.returncode == again.returncode == 1, again.stderr
    assert len(gitlab.diff_notes()) == 1


def test_linked_issues_off_reads_no_issue(gitlab: State, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    with FakeOpenAI(_script(seen), max_model_len=16000) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
             "--gitlab-url", gitlab.url, "--base-url",
             server.base_url, "--no-progress", "--output", "json"],
            capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")},
                 "REVIEWBOT_GITLAB_TOKEN": TOKEN,
                 "REVIEWBOT_LINKED_ISSUES": "false"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["linked_issues"] == []
    assert not any("issues" in r.path for r in gitlab.requests)
    assert OWN_ISSUE not in json.dumps(seen)


def test_an_unreadable_issue_list_is_a_note_not_a_failure(gitlab: State, tmp_path: Path) -> None:
    gitlab.faults.append(Fault("GET", "/closes_issues", 500, times=10))
    with FakeOpenAI(_script([]), max_model_len=16000) as server:
        proc = _review(gitlab, server, tmp_path, "--no-verify")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["stats"]["complete"], proc.stderr
    assert any("issues this change links could not be read" in n for n in out["stats"]["notes"])


@pytest.mark.vllm
def test_the_real_vllm_judges_each_linked_issue(gitlab: State, vllm_server: Any,
                                                tmp_path: Path) -> None:
    """Guided decoding keeps one verdict under each issue's reference: the issue is judged
    (whatever the random-weight model thinks of it), and its line is in the summary."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CI_", "REVIEWBOT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--mr", "7", "--project", "grp/proj",
         "--gitlab-url", gitlab.url, "--base-url",
         vllm_server.base_url, "--no-progress", "--output", "json", "--no-verify", *TINY_FORMAT],
        capture_output=True, text=True, timeout=600,
        env={**clean, "REVIEWBOT_GITLAB_TOKEN": TOKEN}, cwd=tmp_path, check=False)
    assert proc.returncode in (0, 3), proc.stderr
    (issue,) = json.loads(proc.stdout)["linked_issues"]
    assert issue["ref"] == "#12" and issue["verdict"] in ("addressed", "partly", "not")
    (summary,) = [n["body"] for n in gitlab.notes() if not n.get("position")]
    assert "**Linked issues**" in summary and "Admin page: run a command" in summary


def test_a_confidential_issue_or_one_named_only_in_a_comment_never_reaches_anyone(
        gitlab: State, tmp_path: Path) -> None:
    """`closes #2` naming a confidential issue: neither its title nor its text is read,
    quoted or sent; an issue someone mentioned in a comment is not the change's own."""
    gitlab.add_issue(2, "CONFIDENTIAL-TITLE: the breach", "CONFIDENTIAL-BODY: who is affected",
                     confidential=True)
    gitlab.add_issue(40, "COMMENTED-TITLE", "COMMENTED-BODY")
    gitlab.description = "Closes #12 and closes #2."
    gitlab.discussions.append({"id": "c0ffee", "individual_note": True, "notes": [{
        "id": 9001, "body": "related to #40", "author": {"id": 3, "username": "dana"},
        "system": False, "resolvable": False}]})
    seen: list[dict[str, Any]] = []
    with FakeOpenAI(_script(seen), max_model_len=16000) as server:
        proc = _review(gitlab, server, gitlab.repo.root)
    assert proc.returncode == 0, proc.stderr
    prompts = "\n".join(m["content"] for b in seen for m in b["messages"])
    out = json.loads(proc.stdout)
    summary = "".join(n["body"] for n in gitlab.notes() if not n.get("position"))
    for secret in ("CONFIDENTIAL-TITLE", "CONFIDENTIAL-BODY", "COMMENTED-TITLE",
                   "COMMENTED-BODY"):
        assert secret not in prompts and secret not in summary and secret not in proc.stdout
    assert [i["ref"] for i in out["linked_issues"]] == ["#12"]
