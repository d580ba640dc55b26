from __future__ import annotations

import io
import threading

from reviewbot.report.progress import NoProgress, ProgressBar, progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_when_not_a_terminal() -> None:
    assert isinstance(progress(stream=io.StringIO()), NoProgress)


def test_off_when_asked() -> None:
    assert isinstance(progress(enabled=False, stream=Tty()), NoProgress)


def test_bar_on_a_terminal_counts_chunks() -> None:
    stream = Tty()
    bar = progress(stream=stream)
    assert isinstance(bar, ProgressBar)
    bar.start(8)
    workers = [threading.Thread(target=bar.advance) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert bar._progress is not None and bar._progress.tasks[0].completed == 8
    bar.close()
    bar.close()  # idempotent
    assert "Reviewing chunks" in stream.getvalue()


def test_more_advances_than_chunks_grow_the_total() -> None:
    bar = ProgressBar(Tty())
    bar.start(1)
    bar.advance()
    bar.advance()  # the engine re-split a chunk into two pieces
    assert bar._progress is not None
    task = bar._progress.tasks[0]
    assert (task.completed, task.total) == (2, 2)
    bar.close()


def test_calls_out_of_order_are_harmless() -> None:
    bar = ProgressBar(Tty())
    bar.advance()
    bar.close()
    with ProgressBar(Tty()) as b:
        b.start(1)
        b.start(1)  # a second start does not stack a second live display
        b.advance()


def test_noop_has_the_same_methods() -> None:
    noop = NoProgress()
    noop.start(3)
    noop.advance()
    noop.close()
