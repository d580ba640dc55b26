"""The `reviewbot` command line: one lazily imported module per command group.

Lazy imports keep `reviewbot review` light (no server, webhook or torch code on its path).
"""

from __future__ import annotations

import importlib
import sys

import click

from reviewbot.errors import EXIT_INCOMPLETE, EXIT_USAGE, ReviewbotError, ServerNotInstalled
from reviewbot.redact import redact, redacting_warnings


class LazyGroup(click.Group):
    """A click group whose subcommands live in other modules, imported on first use."""

    def __init__(self, *args: object, lazy: dict[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            module_name, attr = self.lazy[cmd_name].split(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name != SERVER_PACKAGE:
                    raise
                return _server_missing
            command: click.Command = getattr(module, attr)
            return command
        return super().get_command(ctx, cmd_name)


# `reviewbot server` lives in a package of its own, installed on the GPU host (server/)
SERVER_PACKAGE = "reviewbot_server"


@click.command(name="server", context_settings={"ignore_unknown_options": True},
               add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def _server_missing(args: tuple[str, ...]) -> None:
    """Plan, launch and supervise vLLM (needs the reviewbot-server package)."""
    raise ServerNotInstalled()


@click.group(
    cls=LazyGroup,
    lazy={
        "review": "reviewbot.commands.review:review",
        "reply": "reviewbot.commands.reply:reply",
        "learnings": "reviewbot.commands.learnings:learnings_group",
        "doctor": "reviewbot.commands.doctor:doctor",
        "history": "reviewbot.commands.history:history",
        "usage": "reviewbot.commands.history:usage",
        "eval": "reviewbot.commands.eval:eval_group",
        "demo": "reviewbot.commands.demo:demo",
        "webhook": "reviewbot.webhook.cli:webhook",
        "server": f"{SERVER_PACKAGE}.cli:server",
    },
)
@click.version_option(package_name="reviewbot")
def cli() -> None:
    """Review merge/pull requests with your own vLLM server."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: every ReviewbotError becomes one line on stderr and its exit code."""
    redacting_warnings()
    try:
        # outside standalone mode click returns ctx.exit(n)'s code instead of exiting
        code = cli.main(args=argv, prog_name="reviewbot", standalone_mode=False)
    except ReviewbotError as exc:
        click.echo(f"reviewbot: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"reviewbot: error: {redact(exc.format_message())}", err=True)
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        click.echo("reviewbot: aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the edge: whatever escaped is one line, exit 3
        # never 1 (that means "findings"), never a traceback (it may carry server text)
        text = redact(" ".join(str(exc).split()))[:300]
        click.echo(f"reviewbot: internal error: {type(exc).__name__}: {text}", err=True)
        sys.exit(EXIT_INCOMPLETE)
    sys.exit(code if isinstance(code, int) else 0)
