"""What the engine tells about its progress: `start(total_chunks)`, `advance()` once per
finished chunk (from any thread), `close()`. The rich bar that shows it lives in
`reviewbot.report.progress`; the engine knows only this protocol."""

from __future__ import annotations

from typing import Protocol


class ChunkProgress(Protocol):
    def start(self, total_chunks: int) -> None: ...
    def advance(self) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    """Same methods, does nothing: for --output to a pipe, tests and the webhook worker."""

    def start(self, total_chunks: int) -> None:
        pass

    def advance(self) -> None:
        pass

    def close(self) -> None:
        pass
