"""The command line's edge, in this process: whatever a command raises becomes one redacted line
on stderr with its documented exit code. `server` without its package:
tests/server/test_package.py."""

from __future__ import annotations

import secrets

import click
import pytest

from reviewbot import cli
from reviewbot.errors import BackendError, UsageError
from reviewbot.redact import register_secret

SECRET = "sk-" + secrets.token_hex(16)  # random: redaction masks its pieces in this process


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.fixture
def raising(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """A command `boom` that raises what the test puts in the list."""
    raised: list[BaseException] = []

    @click.command()
    def boom() -> None:
        raise raised[0]

    monkeypatch.setitem(cli.cli.commands, "boom", boom)
    return raised


@pytest.mark.parametrize("error, code, line", [
    (UsageError("no diff given"), 2, "reviewbot: error: no diff given\n"),
    (BackendError("the model server is gone"), 3, "reviewbot: error: the model server is gone\n"),
    (click.exceptions.Abort(), 130, "reviewbot: aborted\n"),
])
def test_a_known_error_is_one_line_and_its_exit_code(raising: list[BaseException],
                                                     capsys: pytest.CaptureFixture[str],
                                                     error: BaseException, code: int,
                                                     line: str) -> None:
    raising.append(error)
    assert _run(["boom"], capsys) == (code, "", line)


def test_anything_else_is_an_internal_error_exit_3_without_a_secret(
        raising: list[BaseException], capsys: pytest.CaptureFixture[str]) -> None:
    register_secret(SECRET)
    raising.append(KeyError(f"token {SECRET}\nTraceback (most recent call last):"))
    code, _, err = _run(["boom"], capsys)
    assert code == 3 and err.startswith("reviewbot: internal error: KeyError: ")
    assert err.count("\n") == 1 and SECRET not in err  # never 1: that means "findings"


def test_an_unknown_command_or_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["reveiw"], capsys)
    assert code == 2 and err.startswith("reviewbot: error: No such command 'reveiw'")
    code, _, err = _run(["review", "--no-such-flag"], capsys)
    assert code == 2 and "--no-such-flag" in err
