"""A progress bar over chunks on stderr, so stdout stays clean for the report itself.

The engine calls `start(total_chunks)`, `advance()` once per finished chunk (from any thread),
and `close()`. Outside a terminal the bar would only litter CI logs with redraws, so it turns
itself off there.
"""

from __future__ import annotations

import sys
import threading
from typing import Self, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from reviewbot.engine.progress import ChunkProgress, NoProgress


class ProgressBar:
    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True,
                 description: str = "Reviewing chunks") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.description = description
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._total = 0
        self._done = 0
        self._lock = threading.Lock()

    def start(self, total_chunks: int) -> None:
        if not self.enabled or self._progress is not None:
            return
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=self.stream),
            transient=True,  # the report that follows says how many chunks there were
        )
        self._total, self._done = total_chunks, 0
        self._task = self._progress.add_task(self.description, total=total_chunks)
        self._progress.start()

    def advance(self) -> None:
        if self._progress is None or self._task is None:
            return
        with self._lock:
            self._done += 1
            if self._done > self._total:  # a chunk re-split after a context-length error: grow
                self._total = self._done
                self._progress.update(self._task, total=self._total)
            self._progress.advance(self._task)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
            self._task = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress(enabled: bool = True, stream: TextIO | None = None) -> ChunkProgress:
    """A bar on stderr when it is a terminal and `enabled`, otherwise the no-op."""
    bar = ProgressBar(stream, enabled=enabled)
    return bar if bar.enabled else NoProgress()
