"""Every `reviewbot` command the docs show parses against the real command line (a renamed or
removed option or command fails here), every `reviewbot server plan` they show runs, and the
deploy guide's at-a-glance table says what the planner prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from reviewbot.cli import cli
from reviewbot.errors import ReviewbotError
from reviewbot_server.errors import PlanRefused
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "server" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"(?<!`)`((?:reviewbot|reviewbot-server) [^`]+)`(?!`)")
START = re.compile(r"^(?:\$ )?((?:reviewbot|reviewbot-server) .*)$")
SHELL = re.compile(r"\s(?:\||>>?|&&|;|#|2>)\s.*$")  # what follows the command in a pipeline


def shown_commands() -> list[tuple[str, str]]:
    """(where, command) for each reviewbot command in a code block or an inline code span."""
    found = []
    for doc in DOCS:
        text, name = doc.read_text(encoding="utf-8"), str(doc.relative_to(ROOT))
        for block in FENCE.findall(text):
            for line in block.replace("\\\n", " ").splitlines():
                if match := START.match(line.strip()):
                    found.append((name, match.group(1)))
        found += [(name, span) for span in INLINE.findall(FENCE.sub("", text))]
    return [(where, SHELL.sub("", command).strip()) for where, command in found]


def _placeholder(value: str) -> bool:
    return bool(re.search(r"[<$…{|]|\.\.\.|\b[A-Z][A-Z_]*\b|/path/|/models/|/--", value))


def _shown_as_typed(command: str) -> list[str]:
    """The words a reader would type: optional parts ([--db PATH]) taken, alternatives
    (text|json) as their first."""
    words = shlex.split(command.replace("[", " ").replace("]", " "))
    return [w.split("|")[0] for w in words if w != "…"]  # "…": what the reader fills in


def parse_error(command: str) -> str | None:
    """Why click refuses the command's subcommands or options, or None. Values that are
    placeholders (<n>, $VAR, …) and parameters the docs leave to the environment pass."""
    try:
        words = _shown_as_typed(command)
    except ValueError as exc:
        return f"not a shell command: {exc}"
    group: click.Command = cli
    ctx = click.Context(cli, info_name="reviewbot")
    rest = words[1:]
    if words[0] == "reviewbot-server":
        group = cli.get_command(ctx, "server")  # type: ignore[union-attr,assignment]
    while isinstance(group, click.Group) and rest and not rest[0].startswith("-"):
        sub = group.get_command(ctx, rest[0])
        if sub is None:
            return f"no command {rest[0]!r}"
        group, rest = sub, rest[1:]
        ctx = click.Context(group, info_name=group.name, parent=ctx)
    if "--help" in rest or isinstance(group, click.Group):
        return None
    try:
        group.make_context(group.name, list(rest), parent=ctx.parent)
    except (click.NoSuchOption, click.BadOptionUsage) as exc:
        partial = "requires an argument" in exc.format_message() and rest[-1].startswith("-")
        return None if partial or "/--" in command else exc.format_message()
    except click.MissingParameter:
        return None  # the docs leave it to the environment or to the reader
    except click.BadParameter as exc:
        bad = [w for w in rest if not w.startswith("-")]
        return None if any(_placeholder(w) for w in bad) else exc.format_message()
    except click.UsageError as exc:
        return exc.format_message()
    except click.exceptions.Exit:
        return None
    except ReviewbotError as exc:  # an option refused by its own callback
        return str(exc)
    return None


def test_the_docs_show_reviewbot_commands() -> None:
    shown = shown_commands()
    assert len(shown) > 50
    assert any("server plan" in command for _, command in shown)


def test_every_command_the_docs_show_parses() -> None:
    refused = [f"{where}: {command}: {why}" for where, command in shown_commands()
               if (why := parse_error(command))]
    assert refused == []


def test_a_renamed_option_would_be_caught() -> None:
    assert parse_error("reviewbot review --no-such-flag") is not None
    assert parse_error("reviewbot server plan --gpus-count 1") is not None
    assert parse_error("reviewbot nosuch") is not None
    assert parse_error("reviewbot review --mr <iid> --project grp/proj [--db PATH]") is None
    assert parse_error("reviewbot review --output text|json --mr 1") is None
    assert parse_error("reviewbot review --output yaml --mr 1") is not None


# the whole plans the docs show: GPUs named, a catalog model (a local directory is the reader's)
PLANS = sorted({command for _, command in shown_commands()
                if re.match(r"reviewbot(-server| server) plan .*--gpus ", command)
                and not re.search(r"--model (/|DIR)", command) and not _placeholder(command)})


@pytest.mark.parametrize("command", PLANS)
def test_every_plan_the_docs_show_runs(command: str) -> None:
    args = shlex.split(command)[2 if args_of_server(command) else 1:]
    result = CliRunner().invoke(cli, ["server", *args[1:]] if args[0] == "server" else args)
    # a plan, or a refusal the docs show on purpose
    assert result.exit_code == 0 or "cannot plan" in result.output, result.output
    assert "Traceback" not in result.output and "No such option" not in result.output


def args_of_server(command: str) -> bool:
    return command.startswith("reviewbot-server")


# --- docs/deploy/README.md: the at-a-glance table -------------------------------------------

WEIGHTS = {"fp16": ("fp16", None), "bf16": ("bf16", None), "AWQ": ("awq", None),
           "GPTQ": ("gptq", None), "AWQ + fp8 KV": ("awq", "fp8")}


def glance_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "deploy" / "README.md").read_text(encoding="utf-8")
    table = text.split("## At a glance", 1)[1].split("\n\n", 2)[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in table.splitlines()[2:]]
    return [row for row in rows if row[4] != "–"]  # refusals are checked by the plan test


@pytest.mark.parametrize("row", glance_rows(), ids=lambda row: " ".join(row[:3]))
def test_the_deploy_glance_table_is_what_the_planner_prints(row: list[str]) -> None:
    gpus, model, weights, layout, at_once = row
    quantization, kv = WEIGHTS[weights]
    tp = re.search(r"`--tensor-parallel-size (\d+)`", layout)
    try:
        p = plan(gpus.replace("×", "x"), load_model(model.split(" (")[0]), quantization=quantization,
                 kv_cache_dtype=kv)
    except PlanRefused as refused:
        assert refused.nearest is not None and layout.startswith("refused")
        p = refused.nearest
    assert str(p.max_concurrent_reviews) == at_once.split()[0]
    if tp:
        forced = plan(gpus.replace("×", "x"), load_model(model.split(" (")[0]),
                      quantization=quantization,
                      tensor_parallel_size=int(tp.group(1)))
        assert f"{forced.max_concurrent_reviews})" in layout
