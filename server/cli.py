"""`reviewbot server …`: one module per concern, imported lazily."""

from __future__ import annotations

import click

from reviewbot.cli import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy={
        "plan": "server.plan_cli:plan",
        "check": "server.check:check",
        "pin": "server.integrity:pin",
        "bench": "server.bench:bench",
        "up": "server.supervisor_cli:up",
        "status": "server.supervisor_cli:status",
    },
)
def server() -> None:
    """Plan, launch, check and supervise the vLLM backend."""
