"""Packing the change into as few requests as fit the model's context, with exact token counts.

The unit is a whole hunk; a hunk is split only when it alone exceeds the budget, and every piece
of it carries the file header and a few lines of lead-in context. Every changed line is owned by
exactly one piece, so coverage is 100% by construction (`changed_lines` of the pieces add up to
the change's). Packing is first-fit in diff order: pieces are small next to a 64K budget, so
first-fit stays within a few percent of the minimum number of chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reviewbot.diff import ChangeSet, DiffLine, FileDiff, Hunk, Side
from reviewbot.errors import DiffError
from reviewbot.tokens import TokenCounter


@dataclass(frozen=True)
class Piece:
    file: FileDiff
    hunk: Hunk
    lines: tuple[DiffLine, ...]  # what is shown, lead-in context included
    owned: int  # changed lines this piece is responsible for
    part: tuple[int, int] | None  # (k, n) when a hunk was split
    text: str
    tokens: int = 0

    def positions(self) -> set[tuple[Side, int]]:
        return {pos for line in self.lines for pos in line.positions()}


@dataclass(frozen=True)
class Chunk:
    index: int
    pieces: tuple[Piece, ...]

    @property
    def changed_lines(self) -> int:
        return sum(p.owned for p in self.pieces)

    def by_file(self) -> list[tuple[FileDiff, list[Piece]]]:
        """Pieces grouped per file, in diff order."""
        groups: dict[str, tuple[FileDiff, list[Piece]]] = {}
        for piece in self.pieces:
            groups.setdefault(piece.file.path, (piece.file, []))[1].append(piece)
        return list(groups.values())

    def positions(self) -> dict[str, set[tuple[Side, int]]]:
        out: dict[str, set[tuple[Side, int]]] = {}
        for piece in self.pieces:
            out.setdefault(piece.file.path, set()).update(piece.positions())
        return out


def render_line(line: DiffLine) -> str:
    number = line.old if line.kind == "-" else line.new
    return f"{line.kind} {number}| {line.text}"


def file_header(file: FileDiff) -> str:
    status = file.status
    if status == "renamed":
        status = f"renamed from {file.old_path}"
    return f"=== {file.path} ({status})"


def _piece_text(hunk: Hunk, lines: Sequence[DiffLine], part: tuple[int, int] | None) -> str:
    header = hunk.header + (f" (part {part[0]} of {part[1]})" if part else "")
    return header + "\n" + "\n".join(render_line(line) for line in lines)


def make_pieces(
    changes: ChangeSet,
    counter: TokenCounter,
    max_piece_tokens: int,
    context_lines: int = 3,
) -> list[Piece]:
    """One piece per hunk, or several for a hunk that alone exceeds `max_piece_tokens`."""
    hunks = [(f, h) for f in changes.files for h in f.hunks]
    texts = [_piece_text(h, h.lines, None) for _, h in hunks]
    counts = counter.count_texts(texts)
    pieces: list[Piece] = []
    for (file, hunk), text, tokens in zip(hunks, texts, counts):
        if tokens <= max_piece_tokens:
            pieces.append(Piece(file, hunk, hunk.lines, hunk.changed_lines, None, text, tokens))
        else:
            pieces.extend(_split_hunk(file, hunk, counter, max_piece_tokens, context_lines))
    return pieces


def _split_hunk(
    file: FileDiff, hunk: Hunk, counter: TokenCounter, limit: int, context_lines: int
) -> list[Piece]:
    """Consecutive slices of one hunk, each under `limit` tokens with its lead-in context."""
    line_tokens = counter.count_texts([render_line(line) + "\n" for line in hunk.lines])
    header_tokens = counter.count_texts([hunk.header + " (part 99 of 99)\n"])[0]
    slices: list[tuple[int, int]] = []  # [start, end) of owned lines
    start = 0
    while start < len(hunk.lines):
        lead = max(0, start - context_lines)
        used = header_tokens + sum(line_tokens[lead:start])
        end = start
        while end < len(hunk.lines) and used + line_tokens[end] <= limit:
            used += line_tokens[end]
            end += 1
        if end == start:
            raise DiffError(
                f"{file.path}: line {hunk.lines[start].new or hunk.lines[start].old} alone needs "
                f"{line_tokens[start]} tokens, more than a request can hold"
            )
        slices.append((start, end))
        start = end
    pieces = []
    for k, (start, end) in enumerate(slices, 1):
        lines = hunk.lines[max(0, start - context_lines):end]
        owned = sum(1 for line in hunk.lines[start:end] if line.changed)
        text = _piece_text(hunk, lines, (k, len(slices)))
        pieces.append(Piece(file, hunk, lines, owned, (k, len(slices)), text))
    counts = counter.count_texts([p.text for p in pieces])
    return [Piece(p.file, p.hunk, p.lines, p.owned, p.part, p.text, n) for p, n in zip(pieces, counts)]


@dataclass
class _Bin:
    pieces: list[Piece]
    paths: set[str]
    used: int


def pack(
    pieces: Sequence[Piece],
    budget: int,
    fixed_tokens: int,
    file_tokens: Callable[[FileDiff], int],
    piece_overhead: int = 0,
) -> list[Chunk]:
    """First-fit: each piece goes into the first chunk with room.

    `fixed_tokens` is paid once per chunk (system prompt, tool text, wrapper), `file_tokens` once
    per file per chunk (its header and anchor schema), `piece_overhead` once per piece.
    """
    bins: list[_Bin] = []

    def cost(piece: Piece, b: _Bin) -> int:
        header = 0 if piece.file.path in b.paths else file_tokens(piece.file)
        return piece.tokens + piece_overhead + header

    for piece in pieces:
        target = next((b for b in bins if b.used + cost(piece, b) <= budget), None)
        if target is None:
            target = _Bin([], set(), fixed_tokens)
            bins.append(target)
        target.used += cost(piece, target)
        target.pieces.append(piece)
        target.paths.add(piece.file.path)
    return [Chunk(i, tuple(b.pieces)) for i, b in enumerate(bins, 1)]
