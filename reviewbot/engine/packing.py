"""Packing pieces into chunks: first-fit (over the 32 newest chunks with room, so it stays
linear) with the big pieces placed first, which stays within a few percent of the minimum
number of chunks; each chunk shows its pieces in diff order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reviewbot.diff import FileDiff
from reviewbot.engine.chunking import Chunk, Piece


@dataclass
class _Bin:
    pieces: list[Piece]
    paths: set[str]
    used: int
    changed: int = 0  # changed lines owned by the pieces in the bin


MAX_OPEN_BINS = 32


def pack(
    pieces: Sequence[Piece],
    budget: int,
    fixed_tokens: int,
    file_cost: Callable[[FileDiff], int],
    piece_cost: Callable[[Piece], int],
    reserve: Callable[[int], int] = lambda changed: 0,
) -> list[Chunk]:
    """First-fit, big pieces first: each piece goes into the first chunk with room.

    Pieces over 1/8 of the budget are placed first, largest first, so that the small ones fill
    the gaps they leave (plain first-fit in diff order strands a big hunk that arrives late in a
    chunk of its own); the small ones follow in diff order, which keeps a file's hunks
    together. Inside a chunk the pieces keep their diff order and their rows run from 1.
    `fixed_tokens` is paid once per chunk (system prompt, tool text, wrapper), `file_cost` once
    per file per chunk (its header), `piece_cost` once per piece, and `reserve(changed lines)`
    is the answer's room beyond the budget's own (it grows with the findings cap).
    """
    bins: list[_Bin] = []

    def cost(piece: Piece, b: _Bin) -> int:
        return (piece_cost(piece) + (0 if piece.file.path in b.paths else file_cost(piece.file))
                + reserve(b.changed + piece.owned) - reserve(b.changed))

    order = {id(p): i for i, p in enumerate(pieces)}
    big = budget // 8
    # big pieces first, largest first; then the rest in diff order, so that a file's hunks
    # stay together
    placing = sorted(pieces, key=lambda p: -piece_cost(p) if piece_cost(p) > big else 0)
    smallest = min((piece_cost(p) for p in pieces), default=0)
    # first-fit over the bins still open: a bin with less room than the smallest piece is
    # closed, and at most MAX_OPEN_BINS stay open (the oldest is closed), so packing is
    # linear in the pieces (a million tiny hunks against every earlier chunk was quadratic)
    open_bins: list[_Bin] = []
    for piece in placing:
        target = next((b for b in open_bins if b.used + cost(piece, b) <= budget), None)
        if target is None:
            target = _Bin([], set(), fixed_tokens)
            bins.append(target)
            open_bins.append(target)
            if len(open_bins) > MAX_OPEN_BINS:
                open_bins.pop(0)
        target.used += cost(piece, target)
        target.changed += piece.owned
        target.pieces.append(piece)
        target.paths.add(piece.file.path)
        if budget - target.used < smallest:
            open_bins.remove(target)
    # chunks in the order of their first piece, pieces in diff order
    ordered = sorted((sorted(b.pieces, key=lambda p: order[id(p)]) for b in bins),
                     key=lambda ps: order[id(ps[0])])
    return [Chunk.numbered(i, ps) for i, ps in enumerate(ordered, 1)]
