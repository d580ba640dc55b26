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
Order = Callable[[str], tuple[str, int, int]]  # a path's place (reviewbot.engine.units)


def pack(
    pieces: Sequence[Piece],
    budget: int,
    fixed_tokens: int,
    file_cost: Callable[[FileDiff], int],
    piece_cost: Callable[[Piece], int],
    reserve: Callable[[int], int] = lambda changed: 0,
    unit: Callable[[str], str] = lambda path: path,
    place: Order | None = None,
) -> list[Chunk]:
    """First-fit, big items first: each item goes into the first chunk with room.

    An item is a piece, or every piece of a review unit (`unit(path)`: a file and its tests)
    when the unit fits one chunk. Items over 1/8 of the budget are placed first, largest first,
    so that the small ones fill the gaps they leave (plain first-fit strands a big hunk that
    arrives late in a chunk of its own); the small ones follow in unit order (`place(path)`,
    else the diff's), which keeps a file's hunks and a directory's files together. Inside a
    chunk the pieces keep that order and their rows run from 1. `fixed_tokens` is paid once
    per chunk (system prompt, tool text, wrapper), `file_cost` once per file per chunk (its
    header), `piece_cost` once per piece, and `reserve(changed lines)` is the answer's room
    beyond the budget's own (it grows with the findings cap).
    """
    diff_order = {id(p): i for i, p in enumerate(pieces)}

    def key(p: Piece) -> tuple[tuple[str, int, int] | int, int]:
        return (place(p.file.path) if place else 0, diff_order[id(p)])

    def cost(item: list[Piece], b: _Bin) -> int:
        files = {p.file.path: p.file for p in item if p.file.path not in b.paths}
        changed = sum(p.owned for p in item)
        return (sum(piece_cost(p) for p in item) + sum(file_cost(f) for f in files.values())
                + reserve(b.changed + changed) - reserve(b.changed))

    items = _items(sorted(pieces, key=key), unit,
                   lambda item: chunk_cost(item, fixed_tokens, file_cost, piece_cost,
                                           reserve) <= budget)
    big = budget // 8
    empty = _Bin([], set(), 0)
    # big items first, largest first; then the rest in unit order
    placing = sorted(items, key=lambda it: -c if (c := cost(it, empty)) > big else 0)
    smallest = min((piece_cost(p) for p in pieces), default=0)
    bins = _first_fit(placing, budget, fixed_tokens, cost, smallest)
    # chunks in the order of their first piece, pieces in unit order
    ordered = sorted((sorted(b.pieces, key=key) for b in bins), key=lambda ps: key(ps[0]))
    return [Chunk.numbered(i, ps) for i, ps in enumerate(ordered, 1)]


def chunk_cost(pieces: Sequence[Piece], fixed_tokens: int, file_cost: Callable[[FileDiff], int],
               piece_cost: Callable[[Piece], int], reserve: Callable[[int], int]) -> int:
    """What `pack` reckons a chunk of these pieces costs, its answer's reserve included."""
    files = {p.file.path: p.file for p in pieces}
    return (fixed_tokens + sum(map(file_cost, files.values())) + sum(map(piece_cost, pieces))
            + reserve(sum(p.owned for p in pieces)))


def _items(pieces: list[Piece], unit: Callable[[str], str],
           fits: Callable[[list[Piece]], bool]) -> list[list[Piece]]:
    """The pieces of each review unit of several files as one item when it fits one chunk;
    every other piece alone (a file's own hunks stay together by their order)."""
    by_unit: dict[str, list[Piece]] = {}
    for p in pieces:
        by_unit.setdefault(unit(p.file.path), []).append(p)
    items: list[list[Piece]] = []
    for group in by_unit.values():
        several = len({p.file.path for p in group}) > 1
        items += [group] if several and fits(group) else [[p] for p in group]
    order = {id(p): i for i, p in enumerate(pieces)}
    return sorted(items, key=lambda it: order[id(it[0])])


def _first_fit(items: list[list[Piece]], budget: int, fixed_tokens: int,
               cost: Callable[[list[Piece], _Bin], int], smallest: int) -> list[_Bin]:
    """Each item into the first open bin with room. A bin with less room than the smallest
    piece is closed, and at most MAX_OPEN_BINS stay open (the oldest is closed), so packing is
    linear in the pieces (a million tiny hunks against every earlier chunk was quadratic)."""
    bins: list[_Bin] = []
    open_bins: list[_Bin] = []
    for item in items:
        target = next((b for b in open_bins if b.used + cost(item, b) <= budget), None)
        if target is None:
            target = _Bin([], set(), fixed_tokens)
            bins.append(target)
            open_bins.append(target)
            if len(open_bins) > MAX_OPEN_BINS:
                open_bins.pop(0)
        target.used += cost(item, target)
        target.changed += sum(p.owned for p in item)
        target.pieces += item
        target.paths |= {p.file.path for p in item}
        if budget - target.used < smallest:
            open_bins.remove(target)
    return bins
