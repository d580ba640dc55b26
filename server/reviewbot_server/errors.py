"""Every error the server side shows, with its exit code. This package shares no code with the
review client (they meet only at the OpenAI-compatible HTTP API), so it keeps its own tree:

    ServerError (exit 2)
    ├── UsageError           bad flag, config key or value
    ├── BackendError         (exit 3) the model server cannot be used
    │   ├── BackendUnreachable
    │   ├── LaunchError      vLLM did not start or stay up; carries the last log lines
    │   └── ManifestError    the model directory does not match its SHA256SUMS
    └── PlanRefused          (exit 1) no deployment fits; carries the nearest one that does

Messages are one line and pass through `redact`, so no secret the server was given shows.
"""

from __future__ import annotations

from typing import Any

from reviewbot_server.redact import redact

EXIT_USAGE = 2
EXIT_FAILED = 3


class ServerError(Exception):
    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(str(message).split())))

    @property
    def message(self) -> str:
        return str(self)


class UsageError(ServerError):
    pass


class BackendError(ServerError):
    exit_code = EXIT_FAILED


class BackendUnreachable(BackendError):
    pass


class LaunchError(BackendError):
    def __init__(self, message: str, log_tail: list[str] | None = None) -> None:
        super().__init__(message)
        self.log_tail = [redact(line) for line in log_tail or []]
        self.permanent = False  # a restart with the same argv cannot help (bad flag, …)


class ManifestError(BackendError):
    """The model directory does not match its manifest (exit 3)."""


class PlanRefused(ServerError):
    """No plan works; `nearest` is the closest one that does, `alternatives` other ways out."""

    exit_code = 1

    def __init__(self, reason: str, nearest: Any, alternatives: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.nearest = nearest  # the planner's nearest Plan, or None
        self.alternatives = alternatives
