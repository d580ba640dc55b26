"""The GitHub Actions templates parse and keep the fork-safety rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

DIR = Path(__file__).resolve().parents[2] / "templates" / "github"


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DIR / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _steps(wf: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in wf["jobs"].values() for s in job["steps"]]


def test_every_template_parses_and_none_uses_pull_request_target() -> None:
    files = sorted(p.name for p in DIR.glob("*.yml"))
    assert files == ["reviewbot-fork-post.yml", "reviewbot-fork-trigger.yml", "reviewbot.yml"]
    for name in files:
        wf = _load(name)
        assert "pull_request_target" not in wf["on"], name
        assert wf["jobs"] and all(job.get("timeout-minutes") for job in wf["jobs"].values())
        for step in _steps(wf):  # nothing checks out code, so no PR code can run
            assert not str(step.get("uses", "")).startswith("actions/checkout"), name


def test_pull_request_workflow() -> None:
    wf = _load("reviewbot.yml")
    assert list(wf["on"]) == ["pull_request"]
    assert wf["permissions"] == {"contents": "read", "pull-requests": "write"}
    [job] = wf["jobs"].values()
    assert "head.repo.full_name == github.repository" in job["if"]  # forks use the pair
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert "reviewbot review --pr ${{ github.event.pull_request.number }}" in runs[-1]
    env = job["steps"][-1]["env"]
    assert env["REVIEWBOT_API_KEY"] == "${{ secrets.REVIEWBOT_API_KEY }}"
    assert env["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"
    assert {"REVIEWBOT_BASE_URL", "REVIEWBOT_MODEL"} <= set(env)
    install = next(s for s in job["steps"] if "pip install" in s.get("run", ""))
    what = install["run"] + str(install.get("env"))
    assert "torch" not in what and "[server]" not in what and "vllm" not in what
    # no default package: PyPI's "reviewbot" is another project
    assert install["env"]["SPEC"] == "${{ vars.REVIEWBOT_PIP_SPEC }}" and "test -n" in install["run"]


def test_fork_pair_treats_the_artifact_as_data() -> None:
    trigger = _load("reviewbot-fork-trigger.yml")
    post = _load("reviewbot-fork-post.yml")
    assert list(trigger["on"]) == ["pull_request"]
    assert trigger["permissions"] == {"contents": "read"}  # no write, no secrets used
    assert "${{ secrets." not in (DIR / "reviewbot-fork-trigger.yml").read_text()
    assert post["on"]["workflow_run"] == {"workflows": [trigger["name"]], "types": ["completed"]}
    assert post["permissions"]["pull-requests"] == "write"
    for step in _steps(post):  # untrusted values reach scripts only through env
        assert "${{" not in step.get("run", ""), step.get("name")
    check = next(s for s in _steps(post) if s.get("id") == "pr")
    assert re.search(r"\*\[!0-9\]\*", check["run"])  # digits only
    assert check["env"]["EXPECTED_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    last = _steps(post)[-1]
    assert last["run"].startswith('reviewbot review --pr "$PR_NUMBER"')
    assert last["env"]["PR_NUMBER"] == "${{ steps.pr.outputs.number }}"


def _evaluate(expression: str, context: dict[str, Any]) -> bool:
    """GitHub's expression syntax as far as these `if:`s use it: `a == b && c != d`, where
    each side is a property path of the context or a quoted string."""
    def value(term: str) -> Any:
        term = term.strip()
        if term.startswith("'"):
            return term.strip("'")
        node: Any = context
        for part in term.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    result = True
    for clause in expression.split("&&"):
        left, op, right = re.split(r"\s*(==|!=)\s*", clause.strip())
        result &= (value(left) == value(right)) is (op == "==")
    return result


def _events(head_repo: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What GitHub sends part 1 (`pull_request`) and then part 2 (`workflow_run`)."""
    pr = {"github": {"repository": "org/app", "event": {"pull_request": {
        "head": {"repo": {"full_name": head_repo}}}}}}
    run = {"github": {"repository": "org/app", "event": {"workflow_run": {
        "event": "pull_request", "conclusion": "success",
        "head_repository": {"full_name": head_repo}}}}}
    return pr, run


@pytest.mark.parametrize("head_repo,runs", [("org/app", False), ("someone/app-fork", True)])
def test_the_fork_pair_runs_for_forks_only(head_repo: str, runs: bool) -> None:
    """A same-repository PR is reviewed by reviewbot.yml: part 1 records nothing, and part 2
    must skip rather than fail on the missing artifact."""
    pr_event, run_event = _events(head_repo)
    (record,) = _load("reviewbot-fork-trigger.yml")["jobs"].values()
    (post,) = _load("reviewbot-fork-post.yml")["jobs"].values()
    assert _evaluate(record["if"], pr_event) is runs
    assert _evaluate(post["if"], run_event) is runs
