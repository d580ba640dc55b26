"""`reviewbot server …` (or `reviewbot-server …`): one module per concern, imported on first
use. A ServerError becomes one line on stderr and its exit code, never a traceback."""

from __future__ import annotations

import importlib
from typing import Any

import click

from reviewbot_server.errors import ServerError

COMMANDS = {
    "plan": "reviewbot_server.plan_command:plan",
    "check": "reviewbot_server.probe.check:check",
    "pin": "reviewbot_server.probe.integrity:pin",
    "bench": "reviewbot_server.probe.bench:bench",
    "up": "reviewbot_server.supervise.cli:up",
    "status": "reviewbot_server.supervise.cli:status",
    "fetch-model": "reviewbot_server.realmodel:fetch_model",
}


class _Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name].split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ServerError as exc:
            click.echo(f"reviewbot: error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None


@click.group(cls=_Commands)
def server() -> None:
    """Plan, launch, check and supervise the vLLM backend."""
