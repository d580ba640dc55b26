"""`reviewbot demo`: a real local vLLM (CPU build) with a tiny random model, reviewing a sample diff.

It proves the whole path on a laptop with no GPU and no network: model directory built here,
real vLLM server, real chat template, tool calling and guided decoding, token counting.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from reviewbot import config, diff

NOISE = (
    "This demo model has random weights: its findings are noise, placed on valid lines.\n"
    "What it shows is the pipeline: chunking with the server's own token counts, forced tool\n"
    "calls under guided decoding, and anchoring. For real reviews, point the bot at your server:\n"
    "  reviewbot review --git origin/main...HEAD --base-url http://YOUR-VLLM:8000/v1\n"
    "and see docs/deploy/ for serving a Qwen coder model on your GPUs."
)


@click.command()
@click.option("--state-dir", type=click.Path(path_type=Path),
              default=Path.home() / ".cache" / "reviewbot" / "demo", show_default=True,
              help="Where the tiny model and the vLLM log are kept.")
@click.option("--diff", "diff_path", type=click.Path(exists=True, dir_okay=False),
              help="Review this diff instead of the bundled sample.")
@click.option("--output", type=click.Choice(config.OUTPUTS), default="text", show_default=True)
def demo(state_dir: Path, diff_path: str | None, output: str) -> None:
    """Start a local CPU vLLM with a tiny random model and review a sample diff."""
    from reviewbot.engine.build import make_engine
    from reviewbot.report import render
    from reviewbot.report.progress import progress
    from reviewbot.server.process.launcher import LaunchSpec, VllmProcess, free_port
    from reviewbot.server.tinymodel import SERVE_ARGS, SERVE_ENV, build_tiny_model

    raw = (Path(diff_path).read_bytes() if diff_path
           else resources.files("reviewbot").joinpath("data/sample.diff").read_bytes())
    changes = diff.parse(raw)
    model_dir = build_tiny_model(state_dir / "tiny-model")
    spec = LaunchSpec(model_dir=model_dir, port=free_port(), max_model_len=16384,
                      env=SERVE_ENV, extra_args=SERVE_ARGS)
    click.echo(f"Starting vLLM (CPU build) on {spec.root_url}; this takes a minute or two "
               f"(log: {state_dir / 'vllm.log'}) ...", err=True)
    with VllmProcess(spec, log_path=state_dir / "vllm.log"):
        # a random model fills every string to its maxLength: few findings, room to finish them
        settings = config.resolve({"base_url": spec.root_url + "/v1", "model": "tiny",
                                   "max_findings_per_chunk": 2, "temperature": 1.0,
                                   "output": output}, env={}, config_path="/dev/null")
        result = make_engine(settings, progress()).review(changes)
    click.echo(render(result, output, color=output == "text"), nl=False)
    click.echo("\n" + NOISE, err=True)
    raise SystemExit(0 if result.complete else 3)

