"""Pieces and chunks: the change cut into the units requests carry, with exact token counts.

The unit is a whole hunk; a hunk is split only when it alone exceeds the budget, and every piece
of it carries the file header and a few lines of lead-in context. Rows are what the model
anchors findings to, and a row knows its (path, side, line). Only anchorable lines carry one:
every added line, and the first line of each run of removed lines (a finding about removed code
lands there); context lines and the rest of a removed run are shown without a label. Rows are
numbered per chunk from 1, so a label costs few digits (Qwen spends a token on each). Every
changed line is owned by exactly one piece, so coverage is 100% by construction
(`changed_lines` of the pieces add up to the change's). Packing them into
chunks is reviewbot.engine.packing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from reviewbot.anchoring import Row
from reviewbot.diff import DiffLine, FileDiff, Hunk, Side
from reviewbot.engine.prompttext import defuse, label
from reviewbot.engine.tokens import TokenCounter
from reviewbot.errors import DiffError


@dataclass(frozen=True)
class Piece:
    file: FileDiff
    hunk: Hunk
    lines: tuple[DiffLine, ...]  # what is shown: `lead` lines of lead-in context, then owned lines
    lead: int
    # (k, n) when a hunk was split; (k, n, j, m) when its part k was cut again into m pieces
    part: tuple[int, ...] | None
    text: str
    tokens: int = 0  # of `text`; an upper bound once the chunk renumbers it (fewer digits)
    first_row: int = 1  # the row number of the first labelled line
    cut_lines: int = 0  # owned changed lines shown cut short (one line longer than a request)
    cut_chars: int = 0  # the characters of those lines the model did not see
    # one changed line longer than a review unit, shown whole in a request of its own (up to
    # the model's context: Requests.whole_budget)
    alone: bool = False

    @cached_property  # packing asks for it once per piece and chunk tried
    def owned(self) -> int:
        """Changed lines this piece is responsible for (lead-in lines belong to the piece before)."""
        return sum(1 for line in self.lines[self.lead:] if line.changed)

    @cached_property
    def row_count(self) -> int:
        return sum(labelled(self.lines))

    def rows(self) -> dict[int, Row]:
        anchored = (line for line, on in zip(self.lines, labelled(self.lines)) if on)
        return {self.first_row + i: Row(self.file, self.hunk, line) for i, line in enumerate(anchored)}

    def numbered(self, first_row: int) -> Piece:
        """The piece with its rows from `first_row` (its text rendered again)."""
        if first_row == self.first_row:
            return self
        return replace(self, first_row=first_row,
                       text=_piece_text(self.hunk, self.lines, self.part, first_row))


def labelled(lines: Sequence[DiffLine]) -> list[bool]:
    """Which lines carry a row: added lines, and the first of each run of removed lines."""
    return [line.kind == "+" or (line.kind == "-" and (i == 0 or lines[i - 1].kind != "-"))
            for i, line in enumerate(lines)]


@dataclass(frozen=True)
class Chunk:
    index: int
    pieces: tuple[Piece, ...]
    around: str = ""  # code around its hunks, outside the diff (Engine.surroundings)
    # the whole change in one request; else its prompt says "part i", never "of N": a part is
    # sent as soon as it is counted, before the number of parts is known
    whole: bool = False

    @property
    def changed_lines(self) -> int:
        return sum(p.owned for p in self.pieces)

    @property
    def cut(self) -> tuple[int, int]:
        """(changed lines shown cut short, characters of them not shown)."""
        return sum(p.cut_lines for p in self.pieces), sum(p.cut_chars for p in self.pieces)

    def by_file(self) -> list[tuple[FileDiff, list[Piece]]]:
        """Pieces grouped per file, in diff order."""
        groups: dict[str, tuple[FileDiff, list[Piece]]] = {}
        for piece in self.pieces:
            groups.setdefault(piece.file.path, (piece.file, []))[1].append(piece)
        return list(groups.values())

    def rows(self) -> dict[int, Row]:
        out: dict[int, Row] = {}
        for piece in self.pieces:
            out.update(piece.rows())
        return out

    @classmethod
    def numbered(cls, index: int, pieces: Sequence[Piece]) -> Chunk:
        """A chunk whose pieces' rows run 1, 2, … in order: one range in the row schema."""
        out, row = [], 1
        for piece in pieces:
            out.append(piece.numbered(row))
            row += piece.row_count
        return cls(index, tuple(out))

    def positions(self) -> dict[str, set[tuple[Side, int]]]:
        """Every (side, line) a comment may be anchored to, per path."""
        out: dict[str, set[tuple[Side, int]]] = {}
        for row in self.rows().values():
            out.setdefault(row.file.path, set()).update(row.line.positions())
        return out


MAX_CONTEXT_CHARS = 2000  # a long unchanged line is context, not change: shown cut short


def render_line(line: DiffLine, row: int | None) -> str:
    """`+12 code` for a labelled line, `-code` or ` code` for one without a row. A line without
    a row whose code starts with a digit gets one space after its mark (`- 12 code`), so that
    no removed line can pose as a labelled row (`-12 code`) and draw an anchor to it."""
    text = line.text
    if not line.changed and len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + f" … [{len(text) - MAX_CONTEXT_CHARS} more characters]"
    # compact: Qwen spends a token on every digit and space
    if row is not None:
        return f"{line.kind}{row} {defuse(text)}"
    return f"{line.kind}{' ' if text[:1].isdigit() else ''}{defuse(text)}"


def _rows(lines: Sequence[DiffLine], first_row: int) -> list[int | None]:
    out: list[int | None] = []
    row = first_row
    for on in labelled(lines):
        out.append(row if on else None)
        row += on
    return out


def file_header(file: FileDiff) -> str:
    status = file.status
    if status == "renamed":
        status = f"renamed from {label(file.old_path or '')}"
    return f"=== {label(file.path)} ({status})"


def _part_label(part: tuple[int, ...] | None) -> str:
    """The hunk header's suffix: ` (part 1 of 2)`, or ` (part 1 of 2, piece 3 of 6)` for a part
    cut again; each stays true when an earlier part has already gone out."""
    if not part:
        return ""
    pieces = "".join(f", piece {j} of {m}" for j, m in zip(part[2::2], part[3::2]))
    return f" (part {part[0]} of {part[1]}{pieces})"


def _piece_text(hunk: Hunk, lines: Sequence[DiffLine], part: tuple[int, ...] | None,
                first_row: int) -> str:
    header = label(hunk.header) + _part_label(part)
    return header + "\n" + "\n".join(
        render_line(line, row) for line, row in zip(lines, _rows(lines, first_row)))


def hunk_pieces(hunks: Sequence[tuple[FileDiff, Hunk]], counter: TokenCounter) -> list[Piece]:
    """One piece per hunk, counted."""
    # provisional rows, unique across the review: the counts are upper bounds once a chunk
    # numbers its own rows from 1 (Chunk.numbered)
    first_rows, row = [], 1
    for _, h in hunks:
        first_rows.append(row)
        row += len(h.lines)
    texts = [_piece_text(h, h.lines, None, r) for (_, h), r in zip(hunks, first_rows)]
    return [Piece(file, hunk, hunk.lines, 0, None, text, tokens, first)
            for (file, hunk), text, tokens, first
            in zip(hunks, texts, counter.count_texts(texts), first_rows)]


def cut_to_room(
    pieces: Sequence[Piece],
    counter: TokenCounter,
    room: int | Callable[[FileDiff], int],
    context_lines: int = 3,
    alone_room: Callable[[FileDiff], int] | None = None,
) -> list[Piece]:
    """Each piece larger than `room(file)` tokens split (`split`). A changed line too long for
    a piece goes alone, whole, when it fits `alone_room(file)`."""
    out: list[Piece] = []
    for piece in pieces:
        limit = room(piece.file) if callable(room) else room
        alone = alone_room(piece.file) if alone_room else 0
        out.extend([piece] if piece.tokens <= limit
                   else split(piece, counter, limit, context_lines, alone))
    return out


def split(piece: Piece, counter: TokenCounter, limit: int, context_lines: int,
          alone: int = 0) -> list[Piece]:
    """Consecutive slices of a piece's owned lines, each under `limit` tokens with lead-in
    context; a changed line that alone needs more than `limit` is a slice of its own, whole when
    it fits `alone` tokens, else cut to them (to `limit` when `alone` is no larger)."""
    first = piece.first_row
    widest = _part_label((*(piece.part or ()), 99, 99))
    header_tokens = counter.count_texts([piece.hunk.header + widest + "\n"])[0]
    whole = alone - header_tokens if alone > limit else 0
    lines, line_tokens, cut = _cut_long_lines(piece, counter, (limit - header_tokens) // 2, whole)
    slices = _slices(piece, lines, line_tokens, (header_tokens, limit, whole > 0), context_lines)
    parts = [(*(piece.part or ()), k, len(slices)) for k in range(1, len(slices) + 1)]
    texts = [_piece_text(piece.hunk, lines[a:c], part, first + a)
             for part, (a, _, c) in zip(parts, slices)]
    counts = counter.count_texts(texts)
    lone = [c - a == 1 and header_tokens + line_tokens[a] > limit for a, _, c in slices]
    # tokens merged across line boundaries: the sum of lines undercounted a little
    over = max((n - limit for n, solo in zip(counts, lone) if not solo), default=0)
    over_alone = max((n - alone for n, solo in zip(counts, lone) if solo), default=0)
    if over > 0 or over_alone > 0:
        return split(piece, counter, limit - over - 1 if over > 0 else limit, context_lines,
                     alone - over_alone - 1 if over_alone > 0 else alone)

    def owned_cut(b: int, c: int) -> tuple[int, int]:
        here = [n for i, n in cut.items() if b <= i < c and lines[i].changed]
        return len(here), sum(here)

    return [
        Piece(piece.file, piece.hunk, lines[a:c], b - a, part, text, tokens, first + a,
              *owned_cut(b, c), alone=solo)
        for part, (a, b, c), text, tokens, solo in zip(parts, slices, texts, counts, lone)
    ]


def _slices(piece: Piece, lines: Sequence[DiffLine], line_tokens: list[int],
            room: tuple[int, int, bool], context_lines: int) -> list[tuple[int, int, int]]:
    """(lead-in start, owned start, end) of each slice: as many lines as the limit holds, with
    up to `context_lines` of lead-in; a changed line too long for it alone, without lead-in,
    where lines may go alone (`room`: header tokens, limit, whether they may)."""
    header_tokens, limit, alone = room
    slices: list[tuple[int, int, int]] = []
    start = piece.lead
    while start < len(lines):
        if header_tokens + line_tokens[start] > limit:
            line = lines[start]
            if not (alone and line.changed):
                raise DiffError(f"{piece.file.path}: line {line.new or line.old} alone needs "
                                f"{line_tokens[start]} tokens, more than a request can hold")
            slices.append((start, start, start + 1))
            start += 1
            continue
        lead = max(0, start - context_lines)
        if header_tokens + sum(line_tokens[lead:start + 1]) > limit:
            lead = start  # a long lead-in gives way to the line it leads to
        used = header_tokens + sum(line_tokens[lead:start])
        end = start
        while end < len(lines) and used + line_tokens[end] <= limit:
            used += line_tokens[end]
            end += 1
        slices.append((lead, start, end))
        start = end
    return slices


def _cut_long_lines(piece: Piece, counter: TokenCounter, most: int, whole: int = 0
                    ) -> tuple[tuple[DiffLine, ...], list[int], dict[int, int]]:
    """The piece's lines, each that alone needs more than `most` tokens cut short (a changed
    one only beyond `whole`, when that is larger: it goes in a request of its own), with how
    much was cut, their token counts, and the characters cut by line index: one huge line (a
    minified file, an inline SVG) is shown in part rather than failing the review, and counted
    as cut, never as fully reviewed."""
    first = piece.first_row
    lines = list(piece.lines)
    cut: dict[int, int] = {}
    tokens = counter.count_texts([render_line(ln, first + i) + "\n" for i, ln in enumerate(lines)])

    def allowed(i: int) -> int:
        return max(most, whole) if lines[i].changed else most

    # every line counted with a label: a slice may start inside a removed run and label it
    for _ in range(3):  # the cut is estimated from the tokens per character: check, and again
        over = [i for i, t in enumerate(tokens) if t > allowed(i)]
        if not over:
            break
        for i in over:
            text = lines[i].text
            keep = max(1, int(len(text) * allowed(i) / tokens[i] * 0.8) - 60)
            cut[i] = cut.get(i, 0) + len(text) - keep
            lines[i] = replace(lines[i], text=text[:keep]
                               + f" … [line cut: {cut[i]} more characters]")
        recounted = counter.count_texts([render_line(lines[i], first + i) + "\n" for i in over])
        for i, t in zip(over, recounted):
            tokens[i] = t
    return tuple(lines), tokens, cut
