"""The GGUF converter as the script vLLM's interpreter runs: a wrong call says its usage, and it
imports nothing of reviewbot's (it runs where only vLLM is installed). The conversion itself runs
when the real model is first fetched (realmodel.real_model; the `realmodel` tests' set-up)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from reviewbot_server import convert_gguf, realmodel


def test_a_wrong_call_says_its_usage() -> None:
    proc = subprocess.run([sys.executable, str(realmodel.CONVERT), "only-one"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1 and proc.stderr == "usage: convert_gguf.py DIR FILE.gguf OUT\n"


def test_it_imports_nothing_of_reviewbots() -> None:
    tree = ast.parse(realmodel.CONVERT.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {n for n in names if n.startswith("reviewbot")}
    assert realmodel.CONVERT == Path(convert_gguf.__file__)
