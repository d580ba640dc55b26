"""`reviewbot server …`: one module per concern, imported lazily."""

from __future__ import annotations

import click

from reviewbot.cli import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy={
        "plan": "reviewbot.server.plan.cli:plan",
        "check": "reviewbot.server.probe.check:check",
        "pin": "reviewbot.server.probe.integrity:pin",
        "bench": "reviewbot.server.probe.bench:bench",
        "up": "reviewbot.server.supervise.cli:up",
        "status": "reviewbot.server.supervise.cli:status",
        "fetch-model": "reviewbot.server.realmodel:fetch_model",
    },
)
def server() -> None:
    """Plan, launch, check and supervise the vLLM backend."""
