"""One vLLM server's settings, typed, and the one place they become command-line flags.

The planner makes a `ServeConfig` per instance; rendered units run `vllm serve` with it, and the
launcher runs vLLM's API server module with the same flags, so nothing parses an argv back.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServeConfig:
    model: str  # a local directory or a hub id
    served_model_name: str
    host: str
    port: int
    max_model_len: int
    dtype: str
    tool_call_parser: str | None = "hermes"
    flags: tuple[str, ...] = ()  # everything else the planner (or the user) decided, as flags

    def args(self) -> tuple[str, ...]:
        """The flags, without the program and the model."""
        out = ["--served-model-name", self.served_model_name, "--host", self.host,
               "--port", str(self.port), "--dtype", self.dtype,
               "--max-model-len", str(self.max_model_len)]
        if self.tool_call_parser:
            out += ["--enable-auto-tool-choice", "--tool-call-parser", self.tool_call_parser]
        return (*out, *self.flags)

    def vllm_serve(self) -> tuple[str, ...]:
        """The `vllm serve` command line a systemd unit or a person runs."""
        return ("vllm", "serve", self.model, *self.args())
