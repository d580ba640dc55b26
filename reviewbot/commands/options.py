"""What several commands share: their output sink and the options they take alike (the
model server and the engine, a database, a refused secret)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
from click.core import ParameterSource

from reviewbot import choices
from reviewbot.errors import UsageError
from reviewbot.secrets import refuse_password_in_argv


def emit(text: str, output_file: str | None) -> None:
    if output_file:
        try:
            Path(output_file).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output_file}: {exc.strerror}") from None
    else:
        click.echo(text, nl=not text.endswith("\n"))


def database_option(help: str, default: str | None = None) -> Callable[
        [Callable[..., None]], Callable[..., None]]:
    """`--db`: the listener's database, its SQLite file or its postgresql:// URL (also
    $REVIEWBOT_QUEUE_URL, the only way to pass a URL that carries a password)."""

    def not_in_argv(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if ctx.get_parameter_source(param.name or "") is ParameterSource.COMMANDLINE:
            refuse_password_in_argv("--db", value)
        return value

    return click.option("--db", metavar="PATH|URL", default=default,
                        show_default=default is not None, envvar="REVIEWBOT_QUEUE_URL",
                        callback=not_in_argv, help=f"{help} (also $REVIEWBOT_QUEUE_URL).")


def secret_option(flag: str, variable: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A secret's flag, kept so that using it gets a clear refusal: on a command line it is
    visible to every user of the machine (`ps`), and in CI logs that echo commands."""
    def refuse(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None:
            raise UsageError(f"{flag} would show the secret to every user of this machine "
                             f"(`ps`): set {variable} instead")

    return click.option(flag, callback=refuse, expose_value=False, metavar="(refused)",
                        help=f"Refused: a secret on the command line is visible; set {variable}.")


def engine_options(command: Callable[..., None]) -> Callable[..., None]:
    """The flags of the model server and the engine, shared with `reviewbot eval run`."""
    options: list[Callable[[Callable[..., None]], Callable[..., None]]] = [
        click.option("--base-url", help="OpenAI-compatible base URL (default $REVIEWBOT_BASE_URL)."),
        click.option("--model", help="Served model name (default: the first of /v1/models)."),
        secret_option("--api-key", "REVIEWBOT_API_KEY"),
        click.option("--max-context", type=int,
                     help="Upper bound on prompt + output tokens (65536)."),
        click.option("--concurrency", type=int,
                     help="Chunks in flight at once (0: as many as the server's KV cache holds)."),
        click.option("--chunk-tokens", type=int,
                     help="Target prompt tokens per review unit (0: fill the context)."),
        click.option("--tokenizer",
                     help="tokenizer.json to count with when the server has no /tokenize."),
        click.option("--exclude", multiple=True, help="Glob of files to skip (repeatable)."),
        click.option("--temperature", type=float, help="Sampling temperature (0.1)."),
        click.option("--verify/--no-verify", default=None,
                     help="Judge every candidate in a second pass (default: on)."),
        click.option("--samples", type=int, help="Finding passes per chunk that vote (1)."),
        # the values, as in .reviewbot.toml (click would offer an enum's member names)
        click.option("--findings-format",
                     type=click.Choice([f.value for f in choices.FINDINGS_FORMATS]),
                     help="json: a free answer holding a JSON object (default); tool: a "
                     "forced call guided by its schema; reason: the same with an analysis "
                     "first; two-step: a review in words, then the call."),
        click.option("--config", "config_path",
                     help="Config file (default: ./.reviewbot.toml)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command
