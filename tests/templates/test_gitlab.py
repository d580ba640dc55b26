"""The GitLab CI templates parse, use only declared inputs and real CLI flags, run only in MR
pipelines, and publish the Code Quality report."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from reviewbot.commands.review import review

ROOT = Path(__file__).parents[2] / "templates" / "gitlab"
# GitLab resolves `component: <host>/<project>/review@<ref>` to templates/review.yml at the root
COMPONENT = Path(__file__).parents[2] / "templates" / "review.yml"
INCLUDE = ROOT / "reviewbot.gitlab-ci.yml"
MR_ONLY = [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]


def _flags() -> set[str]:
    return {opt for p in review.params for opt in getattr(p, "opts", [])}


def _check_job(job: dict[str, Any]) -> None:
    assert job["rules"] == MR_ONLY
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    assert job["artifacts"]["when"] == "always"
    script = " ".join(job["script"])
    assert "torch" not in script and "vllm" not in script.lower().replace("reviewbot", "")
    command = shlex.split(job["script"][-1])
    assert command[:2] == ["reviewbot", "review"]
    used = {a for a in command if a.startswith("--")}
    assert not used & {"--fail-on", "--mode"}  # settings the target branch's file may hold
    assert used <= _flags(), used - _flags()
    assert command[command.index("--output") + 1] == "codequality"
    assert command[command.index("--output-file") + 1] == "gl-code-quality-report.json"
    assert command[command.index("--mr") + 1] == "$CI_MERGE_REQUEST_IID"


def test_component_has_a_spec_header_then_the_job() -> None:
    docs = list(yaml.safe_load_all(COMPONENT.read_text()))
    assert len(docs) == 2
    inputs = docs[0]["spec"]["inputs"]
    assert {"stage", "image", "base_url", "model", "fail_on", "mode"} <= set(inputs)
    # empty by default: no setting, so the target branch's .reviewbot.toml decides
    assert inputs["fail_on"]["default"] == "" and inputs["mode"]["default"] == ""
    assert "default" not in inputs["base_url"]  # required: no silent default server
    assert "default" not in inputs["package"]  # required: PyPI's "reviewbot" is not this project
    text = COMPONENT.read_text().split("\n---\n", 1)[1]
    used = set(re.findall(r"\$\[\[ inputs\.(\w+) \]\]", text))
    assert used == set(inputs), (used ^ set(inputs))
    jobs = docs[1]
    assert list(jobs) == ["$[[ inputs.job_name ]]"]
    _check_job(jobs["$[[ inputs.job_name ]]"])


def test_plain_include_file_defines_a_ready_job() -> None:
    doc = yaml.safe_load(INCLUDE.read_text())
    base = doc[".reviewbot"]
    assert doc["reviewbot"]["extends"] == ".reviewbot"
    _check_job(base)
    # no job-level default: it would override fail_on of the target branch's .reviewbot.toml
    assert "REVIEWBOT_FAIL_ON" not in base["variables"] and "REVIEWBOT_MODE" not in base["variables"]
    assert "REVIEWBOT_PACKAGE" not in base["variables"]  # no default artefact
    assert 'test -n "$REVIEWBOT_PACKAGE"' in base["script"][0]


def test_templates_tell_the_user_which_token_to_create() -> None:
    for path in (COMPONENT, INCLUDE):
        text = path.read_text()
        assert "REVIEWBOT_GITLAB_TOKEN" in text and "`api` scope" in text
        assert "CI_JOB_TOKEN cannot" in text


def test_the_old_include_path_still_includes_the_template() -> None:
    """`include: project:` users name ci-templates/gitlab/…; a nested `local` include resolves
    in this project at the same ref, so the file there only points at the new home."""
    old = yaml.safe_load((ROOT.parents[1] / "ci-templates" / "gitlab" / INCLUDE.name).read_text())
    assert old == {"include": [{"local": "/" + INCLUDE.relative_to(ROOT.parents[1]).as_posix()}]}
