"""Shared by the chunking tests: a whole change's pieces in one call, and which lines a sequence
of pieces owns."""

from __future__ import annotations

from collections.abc import Callable

from reviewbot.diff import ChangeSet, DiffLine, FileDiff
from reviewbot.engine.chunking import Piece, cut_to_room, hunk_pieces
from reviewbot.engine.tokens import TokenCounter


def make_pieces(changes: ChangeSet, counter: TokenCounter, room: int | Callable[[FileDiff], int],
                context_lines: int = 3,
                alone_room: Callable[[FileDiff], int] | None = None) -> list[Piece]:
    """One piece per hunk, or several for a hunk larger than `room(file)` tokens (the engine
    packs a large change's lead first: reviewbot.engine.fitting)."""
    hunks = [(f, h) for f in changes.files for h in f.hunks]
    return cut_to_room(hunk_pieces(hunks, counter), counter, room, context_lines, alone_room)


def owned_lines(pieces: list[Piece]) -> list[DiffLine]:
    """The lines the pieces own, in order: all shown lines minus each piece's lead-in context."""
    out: list[DiffLine] = []
    for piece in pieces:
        if piece.lead:  # the lead-in is the lines just before, already owned by the piece before
            assert list(piece.lines[:piece.lead]) == out[-piece.lead:]
        out.extend(piece.lines[piece.lead:])
    return out
