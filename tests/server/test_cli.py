"""`reviewbot server …`'s group in this process: its commands listed without importing them, an
unknown one refused, and a ServerError one line with its exit code."""

from __future__ import annotations

import sys

import click
import pytest
from click.testing import CliRunner

from reviewbot_server import cli
from reviewbot_server.errors import BackendError, UsageError


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> list[Exception]:
    """A command `boom` (as if in COMMANDS) that raises what the test puts in the list."""
    raised: list[Exception] = []

    @click.command()
    def boom() -> None:
        raise raised[0]

    module = type(sys)("boom_module")
    module.boom = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "boom_module", module)
    monkeypatch.setitem(cli.COMMANDS, "boom", "boom_module:boom")
    return raised


@pytest.mark.parametrize("error, code", [(UsageError("--gpus names no GPU"), 2),
                                         (BackendError("vLLM\nexited"), 3)])
def test_a_server_error_is_one_line_and_its_exit_code(raising: list[Exception], error: Exception,
                                                      code: int) -> None:
    raising.append(error)
    result = CliRunner().invoke(cli.server, ["boom"])
    assert result.exit_code == code
    assert result.stderr == f"reviewbot: error: {error}\n" and result.stderr.count("\n") == 1


def test_the_commands_are_listed_and_an_unknown_one_refused() -> None:
    result = CliRunner().invoke(cli.server, ["--help"])
    assert result.exit_code == 0
    assert all(name in result.stdout for name in cli.COMMANDS)
    unknown = CliRunner().invoke(cli.server, ["plann"])
    assert unknown.exit_code == 2 and "No such command 'plann'" in unknown.stderr
