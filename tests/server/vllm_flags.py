"""Check planned `vllm serve` argv against vLLM's own argument parser (the tests' flag check).

vLLM is never imported in-process: `check_argvs()` runs this file with vLLM's interpreter
(a separate venv), which builds the serve parser and reports every problem as JSON.
Only the stdlib is imported at module level so that the file runs standalone there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def check_argvs(python: str, argvs: list[list[str]], timeout: float = 180) -> dict[str, Any]:
    """Returns {"version", "errors": [...], "tool_parsers": [...], "reasoning_parsers": [...]}."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # local model dirs only: never the hub
    proc = subprocess.run(
        [python, __file__], input=json.dumps(argvs), capture_output=True, text=True,
        timeout=timeout, check=False, env=env,
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{python} could not build vLLM's serve parser:\n{tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def _probe() -> None:  # runs inside vLLM's interpreter, where these imports resolve
    import vllm  # type: ignore[import-not-found]
    from vllm.engine.arg_utils import EngineArgs  # type: ignore[import-not-found]
    try:  # vLLM 0.32 and before
        from vllm.entrypoints.launchers.cli_args import make_arg_parser  # type: ignore[import-not-found]
    except ImportError:  # vLLM 0.33 moved it
        from vllm.entrypoints.common.cli_args import make_arg_parser  # type: ignore[import-not-found]
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS  # type: ignore[import-not-found]
    from vllm.reasoning import ReasoningParserManager  # type: ignore[import-not-found]
    from vllm.tool_parsers import ToolParserManager  # type: ignore[import-not-found]
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore[import-not-found]
    from vllm.v1.attention.backends.registry import AttentionBackendEnum  # type: ignore[import-not-found]

    tools = sorted(ToolParserManager.list_registered())
    reasoning = sorted(ReasoningParserManager.list_registered())
    errors = []
    for argv in json.load(sys.stdin):
        args = argv[2:] if argv[:2] == ["vllm", "serve"] else argv
        parser = make_arg_parser(FlexibleArgumentParser(exit_on_error=False))
        try:
            namespace = parser.parse_args(args)
        except SystemExit:  # argparse reports on stderr and exits even with exit_on_error
            errors.append(f"rejected by vLLM's parser: {' '.join(args)}")
            continue
        if os.path.isfile(os.path.join(args[0], "config.json")):
            # a local model: vLLM also validates the model config (context vs RoPE/YaRN)
            namespace.model = namespace.model_tag  # what `vllm serve MODEL` does
            try:
                EngineArgs.from_cli_args(namespace).create_model_config()
            except (ValueError, TypeError, OSError) as exc:  # pydantic errors are ValueErrors
                errors.append(f"vLLM rejects the model config: {str(exc)[:400]}")
        checks = [
            ("--tool-call-parser", tools), ("--reasoning-parser", reasoning),
            ("--quantization", list(QUANTIZATION_METHODS)),
            ("--attention-backend", [b.name for b in AttentionBackendEnum]),
        ]
        for flag, known in checks:
            value = _value(args, flag)
            if value is not None and value not in known:
                errors.append(f"{flag} {value} is not known to vLLM {vllm.__version__}")
    print(json.dumps({"version": vllm.__version__, "errors": errors,
                      "tool_parsers": tools, "reasoning_parsers": reasoning}))


if __name__ == "__main__":
    _probe()
