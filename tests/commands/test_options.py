"""The options several commands share: a secret's flag refused, a password kept off argv."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from reviewbot.choices import FindingsFormat
from reviewbot.commands.options import database_option, emit, engine_options, secret_option
from reviewbot.config import resolve
from reviewbot.errors import UsageError


@click.command()
@secret_option("--api-key", "REVIEWBOT_API_KEY")
@database_option("Where to record")
def probe(db: str | None) -> None:
    click.echo(f"db={db}")


def test_a_secrets_flag_is_refused_naming_its_variable_never_the_value() -> None:
    result = CliRunner().invoke(probe, ["--api-key", "sk-abcdef0123456789"])
    assert isinstance(result.exception, UsageError)
    assert "REVIEWBOT_API_KEY" in str(result.exception)
    assert "sk-abcdef" not in str(result.exception)


def test_a_database_url_with_a_password_is_refused_on_argv_and_taken_from_the_environment() -> None:
    url = "postgresql://bot:s3cret-Passw0rd-x9@127.0.0.1/reviews"
    refused = CliRunner().invoke(probe, ["--db", url])
    assert isinstance(refused.exception, UsageError) and "s3cret" not in str(refused.exception)
    taken = CliRunner().invoke(probe, [], env={"REVIEWBOT_QUEUE_URL": url})
    assert taken.exit_code == 0 and taken.output == f"db={url}\n"


def test_emit_writes_the_file_or_stdout(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    emit("report", str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_text() == "report"
    emit("to stdout\n", None)
    assert capsys.readouterr().out == "to stdout\n"


@click.command()
@engine_options
def engine_probe(config_path: str | None, **flags: object) -> None:
    settings = resolve({k: v for k, v in flags.items() if v is not None}, env={},
                       config_path="/dev/null")
    click.echo(settings.findings_format.value)


@pytest.mark.parametrize("mode", [f.value for f in FindingsFormat])
def test_findings_format_takes_the_values_a_settings_file_takes(mode: str) -> None:
    result = CliRunner().invoke(engine_probe, ["--findings-format", mode])
    assert result.exit_code == 0 and result.output == f"{mode}\n", result.output


def test_findings_format_refuses_a_member_name() -> None:
    assert CliRunner().invoke(engine_probe, ["--findings-format", "TWO_STEP"]).exit_code == 2
