"""`reviewbot learnings`: what the bot remembers of a project, shown, removed or exported."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import click

from reviewbot.commands.options import database_option, emit
from reviewbot.config import CONFIG_FILE
from reviewbot.conversation.learnings import (
    TALLY_DAYS,
    FindingOutcome,
    Learning,
    LearningStore,
    export_toml,
    tally_line,
)
from reviewbot.db import LISTENER_DB, open_existing
from reviewbot.errors import UsageError


def _options(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option("--project", required=True,
                           help="The project: GitLab id or path (group/app), GitHub "
                                "owner/name.")(command)
    return database_option("The listener's database: its SQLite file or its postgresql:// "
                           "URL", LISTENER_DB)(command)


def _store(db: str, project: str) -> tuple[LearningStore, str]:
    """The database, and the key the project's learnings are kept under (a GitLab path the
    bot has seen resolves to the project's id)."""
    store = LearningStore.of(open_existing(db))
    return store, store.resolve(project)


def _named(project: str, key: str) -> str:
    return project if key == project else f"{project} (id {key})"


def _line(x: Learning) -> str:
    waiting = "" if x.approved else "  [awaiting approval]"
    return (f"{x.id:>5}  {','.join(x.paths):<24} {x.category or '-':<16} "
            f"{json.dumps(x.text, ensure_ascii=False)}  ({x.source}, by {x.author}){waiting}")


@click.group(name="learnings")
def learnings_group() -> None:
    """What the bot learned from a project's dismissed findings."""


@learnings_group.command(name="list")
@_options
@click.option("--output", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def list_learnings(project: str, db: str, fmt: str) -> None:
    """Every learning of the project, newest first."""
    store, key = _store(db, project)
    found = store.list(key)
    if fmt == "json":
        emit(json.dumps([x.to_dict() for x in found], indent=2) + "\n", None)
    else:
        emit("\n".join(_line(x) for x in found) + "\n" if found
             else f"no learnings for project {_named(project, key)}\n", None)


@learnings_group.command()
@_options
@click.option("--days", type=click.FloatRange(min=0, min_open=True), default=TALLY_DAYS,
              show_default=True, help="Count the findings whose latest word came this recently.")
@click.option("--output", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def stats(project: str, db: str, days: float, fmt: str) -> None:
    """What became of the findings the bot posted on the project: accepted (fixed by a later
    push, `fixed`, 👍), dismissed (`ignore`, withdrawn, 👎) and still open."""
    store, key = _store(db, project)
    counts = store.tally(key, days).get(key, {o: 0 for o in FindingOutcome})
    if fmt == "json":
        emit(json.dumps({"project": key, "days": days,
                         **{o.value: counts[o] for o in FindingOutcome}}) + "\n", None)
    else:
        emit(f"{_named(project, key)}: "
             f"{tally_line(counts, days) or f'no findings in {days:g} days'}\n", None)


@learnings_group.command()
@_options
@click.argument("learning_id", type=int)
def show(project: str, db: str, learning_id: int) -> None:
    """One learning, as JSON."""
    store, key = _store(db, project)
    found = store.get(key, learning_id)
    if found is None:
        raise UsageError(f"project {_named(project, key)} has no learning {learning_id}")
    emit(json.dumps(found.to_dict(), indent=2) + "\n", None)


@learnings_group.command()
@_options
@click.argument("learning_id", type=int)
def rm(project: str, db: str, learning_id: int) -> None:
    """Forget one learning: later reviews no longer see it."""
    store, key = _store(db, project)
    if not store.remove(key, learning_id):
        raise UsageError(f"project {_named(project, key)} has no learning {learning_id}")
    emit(f"removed learning {learning_id}\n", None)


@learnings_group.command()
@_options
@click.argument("learning_id", type=int)
def approve(project: str, db: str, learning_id: int) -> None:
    """Let a learning apply (with learnings_need_approval, new ones wait for this)."""
    store, key = _store(db, project)
    if not store.approve(key, learning_id):
        raise UsageError(f"project {_named(project, key)} has no learning {learning_id}")
    emit(f"approved learning {learning_id}\n", None)


@learnings_group.command()
@_options
@click.option("--config", "config_path", default=CONFIG_FILE, show_default=True,
              help="The .reviewbot.toml the rules are for: written in its form "
                   "([[reviewbot.rules]] under a [reviewbot] table, else [[rules]]).")
def export(project: str, db: str, config_path: str) -> None:
    """The project's approved learnings as rules to append to a .reviewbot.toml (CI-only
    teams): `reviewbot learnings export --project 42 >> .reviewbot.toml`."""
    store, key = _store(db, project)
    emit(export_toml(store.list(key), _rules_table(Path(config_path))), None)


def _rules_table(path: Path) -> str:
    """`reviewbot.rules` when the file keeps its settings under `[reviewbot]`, else `rules`."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return "rules"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {path} to match its form: {exc}") from None
    return "reviewbot.rules" if isinstance(data.get("reviewbot"), dict) else "rules"
