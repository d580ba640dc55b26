"""The click cases of the planted golden set and a review result's JSON, for the tests of the
evaluation and of the `eval` command."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "eval" / "planted"


@pytest.fixture(name="click")
def click_cases(tmp_path: Path) -> Path:
    """The five click cases alone: the scripted model of tests/commands/test_eval.py knows
    their answers."""
    out = tmp_path / "click-golden"
    for case in GOLDEN.glob("click-*"):
        shutil.copytree(case, out / case.name)
    return out


def result_json(findings: list[dict[str, Any]], complete: bool = True) -> dict[str, Any]:
    return {"findings": findings, "summary": "",
            "stats": {"complete": complete, "errors": [] if complete else ["chunk 1: HTTP 503"],
                      "prompt_tokens": 100, "completion_tokens": 20, "wall_seconds": 2.5}}
