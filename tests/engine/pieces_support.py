"""Shared by the chunking tests: which lines a sequence of pieces owns."""

from __future__ import annotations

from reviewbot.diff import DiffLine
from reviewbot.engine.chunking import Piece


def owned_lines(pieces: list[Piece]) -> list[DiffLine]:
    """The lines the pieces own, in order: all shown lines minus each piece's lead-in context."""
    out: list[DiffLine] = []
    for piece in pieces:
        if piece.lead:  # the lead-in is the lines just before, already owned by the piece before
            assert list(piece.lines[:piece.lead]) == out[-piece.lead:]
        out.extend(piece.lines[piece.lead:])
    return out
