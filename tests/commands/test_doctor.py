"""`reviewbot doctor`'s own output, in this process: a row per check, what servers said kept to
one visible line, JSON through the same redaction, and exit 1 when a check failed. The checks
against real servers: tests/flow/test_doctor.py and tests/forges/*/test_doctor.py."""

from __future__ import annotations

import json

from click.testing import CliRunner

from reviewbot.checks import Check
from reviewbot.commands.doctor import _line, doctor

CLEAN = {"REVIEWBOT_BASE_URL": "", "REVIEWBOT_GITLAB_TOKEN": "", "GITHUB_TOKEN": "",
         "CI_SERVER_URL": "", "GITHUB_API_URL": ""}


def test_a_row_is_one_visible_line_whatever_the_server_said() -> None:
    row = _line(Check.failed("model server", "refused\n\x1b[31mFAKE OK row\x1b[0m", "start it\r\nnow"))
    assert row.count("\n") == 2 and "\x1b" not in row
    assert row.startswith("FAILED   model server") and "\n         fix: start it" in row
    assert _line(Check.ok("database", "sqlite")).count("\n") == 1


def test_an_unreachable_model_server_fails_and_exits_1() -> None:
    result = CliRunner().invoke(doctor, ["--base-url", "http://127.0.0.1:9/v1", "--config",
                                         "/dev/null", "--output", "json"], env=CLEAN)
    assert result.exit_code == 1, result.output
    checks = {c["name"]: c for c in json.loads(result.output)}
    assert checks["model server"]["status"] == "failed" and checks["model server"]["fix"]
