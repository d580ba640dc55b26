"""Fitting a change into the budget: exact-token chunks, then the code around them (and the
definitions they call) in whatever room each chunk has left."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from reviewbot.context import Context
from reviewbot.diff import ChangeSet, FileDiff
from reviewbot.engine.chunking import Chunk, Piece, file_header, make_pieces, split
from reviewbot.engine.definitions import Definition, called_names, defined_in
from reviewbot.engine.packing import pack
from reviewbot.engine.requests import Requests
from reviewbot.engine.surroundings import definition_blocks, surrounding_blocks
from reviewbot.engine.tokens import TokenCounter
from reviewbot.engine.units import pairs, unit_order
from reviewbot.errors import ContextTooSmall

MAX_HEAD_FILES = 200  # files read for the code around the hunks, per review
FRAMING = 64  # tokens of a section's own framing


@dataclass
class Fitting:
    requests: Requests
    counter: TokenCounter

    def exact(self, pieces: Sequence[Piece], context: Context) -> int:
        return self.counter.count_request(
            *self.requests.request(Chunk.numbered(0, pieces), 1, context))

    def chunks(self, changes: ChangeSet, context: Context) -> list[Chunk]:
        """Pack with per-part estimates, then check every chunk's exact count and repair."""
        budget, settings = self.requests.budget, self.requests.settings
        fixed = self.exact((), context)
        if fixed + FRAMING > budget:
            raise ContextTooSmall(
                f"the system prompt and tools take {fixed} tokens, and max_context "
                f"({self.requests.context}) less max_output_tokens "
                f"({settings.max_output_tokens}) leaves {budget} (chunk_tokens: "
                f"{settings.chunk_tokens or 'off'}): no room for the diff")
        # every file header counted in one batch (by path: hashing a FileDiff hashes its lines);
        # one call per file made a 50 MB change thousands of sequential round trips
        headers = dict(zip((f.path for f in changes.files),
                           self.counter.count_texts([file_header(f) + "\n"
                                                     for f in changes.files])))

        def header_cost(file: FileDiff) -> int:
            return headers[file.path] + 1

        def piece_cost(piece: Piece) -> int:
            return piece.tokens + 2  # its joining newline, and a merge across the boundary

        def room(file: FileDiff) -> int:
            return budget - fixed - header_cost(file) - 8

        reserve = self.requests.extra_output
        tested, place = pairs(changes.files), unit_order(changes.files)

        def repack(pieces: Sequence[Piece]) -> list[Chunk]:
            return pack(pieces, budget, fixed, header_cost, piece_cost, reserve,
                        lambda path: tested.get(path, path), place.__getitem__)

        packed = repack(make_pieces(changes, self.counter, room, settings.context_lines))
        if not self.counter.exact:  # the same counter made the estimates: nothing to check
            return packed
        fitted: list[tuple[Piece, ...]] = []
        while packed:
            leftovers: list[Piece] = []
            for chunk in packed:
                fitted.append(self._fit(list(chunk.pieces), leftovers, context))
            packed = repack(leftovers)
        return [Chunk.numbered(i, pieces) for i, pieces in enumerate(fitted, 1)]

    def _fit(self, kept: list[Piece], leftovers: list[Piece],
             context: Context) -> tuple[Piece, ...]:
        """`kept` cut to its exact budget; what does not fit goes to the front of `leftovers`."""
        while (over := self.exact(kept, context) - self.requests.budget
               + self.requests.extra_output(sum(p.owned for p in kept))) > 0:
            if len(kept) > 1:  # the estimate let one piece too many in: move it on
                leftovers.insert(0, kept.pop())
            else:  # one piece alone is too big: cut it finer
                parts = split(kept[0], self.counter, kept[0].tokens - over - 32,
                              self.requests.settings.context_lines)
                kept, leftovers[:0] = parts[:1], parts[1:]
        return tuple(kept)

    def with_surroundings(self, chunks: list[Chunk], context: Context,
                          until: float = math.inf) -> list[Chunk]:
        """Each chunk with the code around its hunks, as much as its budget still holds after
        the diff and the intent (the diff always comes first: coverage does not depend on it).
        Context is gathered until the monotonic time `until`; chunks after it go without."""
        settings = self.requests.settings
        if context.files is None or not chunks or (
                settings.surrounding_lines == 0 and settings.max_enclosing_lines == 0):
            return chunks
        head = _head_reader(context, until)
        found = _definitions(chunks, context, head)
        out = []
        for chunk in chunks:
            if time.monotonic() > until:
                out.append(chunk)
                continue
            blocks = surrounding_blocks(chunk, head, settings.surrounding_lines,
                                        settings.max_enclosing_lines)
            blocks += definition_blocks(chunk, found)  # after the code around: less relevant
            room = (self.requests.budget - self.exact(chunk.pieces, context)
                    - self.requests.extra_output(chunk.changed_lines) - FRAMING)
            out.append(replace(chunk, around="\n".join(self._within(blocks, room))))
        return out

    def _within(self, blocks: list[str], room: int) -> list[str]:
        kept, used = [], 0
        for block, cost in zip(blocks, self.counter.count_texts(blocks) if blocks else []):
            if used + cost + 4 <= room:
                kept.append(block)
                used += cost + 4
        return kept


def _head_reader(context: Context, until: float) -> Callable[[str], list[str] | None]:
    """A head file's lines, read once per review, at most MAX_HEAD_FILES and until `until`."""
    texts: dict[str, list[str] | None] = {}

    def head(path: str) -> list[str] | None:
        if path not in texts and (len(texts) >= MAX_HEAD_FILES or time.monotonic() > until):
            return None  # one API call per file on a forge: bounded per review
        if path not in texts:
            text = context.files(path) if context.files else None
            texts[path] = text.replace("\r\n", "\n").split("\n") if text is not None else None
        return texts[path]

    return head


def _definitions(chunks: list[Chunk], context: Context,
                 head: Callable[[str], list[str] | None]) -> list[Definition]:
    """Definitions of the names the chunks' added lines call, found once per review."""
    if context.definitions is None:
        return []
    added = [ln.text for c in chunks for p in c.pieces for ln in p.lines if ln.kind == "+"]
    shown = [ln.text for c in chunks for p in c.pieces for ln in p.lines if ln.kind != "-"]
    found: list[Definition] = context.definitions(called_names(added, defined_in(shown)), head)
    return found
