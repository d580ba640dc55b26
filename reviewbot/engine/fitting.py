"""Fitting a change into the budget: chunks within their units (counted exactly where the
estimate could be wrong), then the code around them (and the definitions they call) in
whatever room each chunk has left."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial

from reviewbot.context import Context
from reviewbot.diff import ChangeSet, DiffLine, FileDiff
from reviewbot.engine.chunking import (
    Chunk,
    Piece,
    cut_to_room,
    file_header,
    hunk_pieces,
    split,
)
from reviewbot.engine.definitions import Definition, called_names, defined_in
from reviewbot.engine.messages import SAFETY_TOKENS, Requests
from reviewbot.engine.packing import chunk_cost, pack
from reviewbot.engine.surroundings import definition_blocks, surrounding_blocks
from reviewbot.engine.tokens import TokenCounter
from reviewbot.engine.units import diff_chars, lead_units, pairs, unit_order
from reviewbot.errors import ContextTooSmall

MAX_HEAD_FILES = 200  # files read for the code around the hunks, per review
FRAMING = 64  # tokens of a section's own framing
FIT_AHEAD = 4  # chunks whose exact counts are asked at once, ahead of the one being sent
# A large change's first files, about this many review units of them, are counted and packed
# alone, so that their requests go out while the rest is counted (the server is busy from the
# start, not after every piece of the change is counted). Characters a token only size it.
LEAD_UNITS = 4
LEAD_CHARS_PER_TOKEN = 3
# A chunk packed within its unit and this share of the context below it goes without its
# exact count, which tokenized its text once more before its request could leave.
EXACT_NEAR = 1 / 16


@dataclass
class Fitted:
    """A change's chunks, each yielded as soon as it is fitted (`_fit`), so that its request can
    go out while later ones are still counted. `estimate` is how many the estimates packed (a
    progress bar's first total: the exact counts may move a piece or two into one more).
    `cost` is what packing reckons a chunk of some of its pieces costs, the answer's reserve
    included: an over-count, no `/tokenize` call."""

    estimate: int
    chunks: Generator[Chunk, None, None]
    cost: Callable[[Sequence[Piece]], int]


def _none() -> Generator[Chunk, None, None]:
    yield from ()


NOTHING = Fitted(0, _none(), lambda pieces: 0)  # nothing to review (closing it again is a no-op)


@dataclass
class Fitting:
    requests: Requests
    counter: TokenCounter

    def exact(self, pieces: Sequence[Piece], context: Context) -> int:
        return self.counter.count_request(
            *self.requests.request(Chunk.numbered(0, pieces), context))

    def exact_cost(self, pieces: Sequence[Piece], context: Context) -> int:
        """`exact`, with the answer's reserve: what `Fitted.cost` estimates."""
        return self.exact(pieces, context) + self.requests.extra_output(
            sum(p.owned for p in pieces))

    def chunks(self, changes: ChangeSet, context: Context) -> list[Chunk]:
        return list(self.fitted(changes, context).chunks)

    def stream(self, changes: ChangeSet, context: Context,
               until: float = math.inf) -> Fitted:
        """`fitted`, each chunk with the code around it (`with_surroundings`) as it comes."""
        fitted = self.fitted(changes, context)
        lines = [ln for f in changes.files for h in f.hunks for ln in h.lines]
        surround = self._surrounder(lines, context, until, fitted.cost)
        return replace(fitted, chunks=(surround(c) for c in fitted.chunks))

    def _too_small(self, fixed: int) -> ContextTooSmall:
        """Which of the user's settings leaves no room for the diff, and what would."""
        settings = self.requests.settings
        full = self.requests.context - settings.max_output_tokens - SAFETY_TOKENS
        if settings.chunk_tokens and settings.chunk_tokens < full:  # the unit is the limit
            return ContextTooSmall(
                f"chunk_tokens {settings.chunk_tokens} is too small: the instructions and "
                f"tools alone take {fixed} tokens; give at least {fixed + FRAMING + 1024}")
        return ContextTooSmall(
            f"a context of {self.requests.context} tokens is too small: the instructions "
            f"and tools take {fixed} and an answer needs {settings.max_output_tokens}; "
            f"give --max-context at least "
            f"{fixed + FRAMING + settings.max_output_tokens + SAFETY_TOKENS + 1024}")

    def fitted(self, changes: ChangeSet, context: Context) -> Fitted:
        """Pack with per-part estimates; a chunk whose estimate is over its unit or near the
        context is counted exactly and repaired (`_fit`: what moves out is packed again after
        the rest). A large change's lead (`lead_units`) goes out before the rest is counted."""
        budget, settings = self.requests.budget, self.requests.settings
        fixed = self.exact((), context)
        if fixed + FRAMING > budget:
            raise self._too_small(fixed)
        # every file header counted in one batch (by path: hashing a FileDiff hashes its lines);
        # one call per file made a 50 MB change thousands of sequential round trips
        headers = dict(zip((f.path for f in changes.files),
                           self.counter.count_texts([file_header(f) + "\n"
                                                     for f in changes.files])))

        def header_cost(file: FileDiff) -> int:
            return headers[file.path] + 1

        def room(file: FileDiff, within: int = budget) -> int:
            return within - fixed - header_cost(file) - 8

        def alone_room(file: FileDiff) -> int:  # one changed line in a request of its own
            return room(file, self.requests.whole_budget) - self.requests.extra_output(1)

        reserve = self.requests.extra_output
        tested, place = pairs(changes.files), unit_order(changes.files)
        estimate = partial(chunk_cost, fixed_tokens=fixed, file_cost=header_cost,
                           piece_cost=_piece_cost, reserve=reserve)

        def repack(pieces: Sequence[Piece]) -> list[Chunk]:
            return pack(pieces, budget, fixed, header_cost, _piece_cost, reserve,
                        lambda path: tested.get(path, path), place.__getitem__)

        def cut(pieces: list[Piece]) -> list[Piece]:
            return cut_to_room(pieces, self.counter, room, settings.context_lines, alone_room)

        everything = [(f, h) for f in changes.files for h in f.hunks]
        size = diff_chars(everything)
        lead_chars = LEAD_UNITS * budget * LEAD_CHARS_PER_TOKEN
        if not self.counter.exact or size <= lead_chars:
            packed = repack(cut(hunk_pieces(everything, self.counter)))
            if self.counter.exact:
                return Fitted(len(packed), self._checked(packed, repack, estimate, context),
                              estimate)
            one = len(packed) == 1  # the same counter made the estimates: nothing to check
            return Fitted(len(packed), (replace(c, whole=one) for c in packed), estimate)
        lead, rest = lead_units(changes.files, tested, place, lead_chars, lead_chars // LEAD_UNITS)
        counted = hunk_pieces(lead, self.counter)
        packed = repack([p for p in counted if p.tokens <= room(p.file)])
        # the least filled of the lead's chunks waits for the rest of the change, to fill up
        back = min(packed, key=lambda c: sum(p.tokens for p in c.pieces), default=None)
        # the whole change's tokens, guessed from the lead's
        tokens = sum(p.tokens for p in counted) * size / max(diff_chars(lead), 1)

        def later() -> list[Piece]:  # with the lead's hunks too large for a chunk, to be split
            return [*(back.pieces if back else ()), *cut(
                [p for p in counted if p.tokens > room(p.file)] + hunk_pieces(rest, self.counter))]

        return Fitted(math.ceil(tokens / (budget - fixed)),
                      self._checked([c for c in packed if c is not back], repack, estimate,
                                    context, later), estimate)

    def _checked(self, packed: list[Chunk], repack: Callable[[Sequence[Piece]], list[Chunk]],
                 estimate: Callable[[Sequence[Piece]], int], context: Context,
                 later: Callable[[], list[Piece]] | None = None
                 ) -> Generator[Chunk, None, None]:
        """The packed chunks cut to their exact budgets where their `estimate` is over their
        unit or near the context (`_fit`), in order, FIT_AHEAD counted at once; the pieces cut
        off are packed again and follow, with `later`'s (the rest of the change, counted once
        `packed` has gone out)."""
        pool = ThreadPoolExecutor(max_workers=FIT_AHEAD, thread_name_prefix="fit")
        index = 0
        try:
            while packed or later:
                fits = [pool.submit(self._fit, list(c.pieces), estimate, context)
                        for c in packed]
                leftovers: list[Piece] = []
                for fit in fits:
                    kept, left = fit.result()
                    leftovers += left
                    index += 1
                    whole = index == 1 and len(packed) == 1 and not left and later is None
                    yield replace(Chunk.numbered(index, kept), whole=whole)
                if later is not None:
                    leftovers, later = leftovers + later(), None
                packed = repack(leftovers)
        finally:  # a review that stops taking chunks (its deadline) leaves none being counted
            pool.shutdown(wait=False, cancel_futures=True)

    def _fit(self, kept: list[Piece], estimate: Callable[[Sequence[Piece]], int],
             context: Context) -> tuple[list[Piece], list[Piece]]:
        """`kept` cut to its exact budget (the whole context's for a line alone), and what did
        not fit (in order); as it is where its estimate is within the budget and EXACT_NEAR
        of the context below it."""
        whole = self.requests.whole_budget
        if estimate(kept) <= min(self._limit(kept), whole - int(whole * EXACT_NEAR)):
            return kept, []
        leftovers: list[Piece] = []
        while (over := self.exact_cost(kept, context) - self._limit(kept)) > 0:
            if len(kept) > 1:  # the estimate let one piece too many in: move it on
                leftovers.insert(0, kept.pop())
            else:  # one piece alone is too big: cut it finer
                smaller = kept[0].tokens - over - 32
                parts = split(kept[0], self.counter, min(smaller, self.requests.budget),
                              self.requests.settings.context_lines,
                              smaller if kept[0].alone else 0)
                kept, leftovers[:0] = parts[:1], parts[1:]
        return kept, leftovers

    def _limit(self, kept: list[Piece]) -> int:
        alone = len(kept) == 1 and kept[0].alone
        return self.requests.whole_budget if alone else self.requests.budget

    def with_surroundings(self, chunks: list[Chunk], context: Context,
                          until: float = math.inf) -> list[Chunk]:
        """Each chunk with the code around its hunks (`_surrounder`)."""
        lines = [ln for c in chunks for p in c.pieces for ln in p.lines]
        exact = partial(self.exact_cost, context=context)
        return list(map(self._surrounder(lines, context, until, exact), chunks))

    def _surrounder(self, lines: list[DiffLine], context: Context, until: float,
                    cost: Callable[[Sequence[Piece]], int]) -> Callable[[Chunk], Chunk]:
        """A chunk with the code around its hunks, as much as its budget still holds after the
        diff, the intent and the answer's reserve (their `cost`; the diff always comes first:
        coverage does not depend on it). Context is gathered until the monotonic time `until`;
        chunks after it go without. The definitions the change's added lines call (`lines`: all
        of the review's) are looked up once, for the first chunk."""
        settings = self.requests.settings
        if context.files is None or (
                settings.surrounding_lines == 0 and settings.max_enclosing_lines == 0):
            return lambda chunk: chunk
        head = _head_reader(context, until)
        found: list[list[Definition]] = []

        def surround(chunk: Chunk) -> Chunk:
            if time.monotonic() > until:
                return chunk
            if not found:
                found.append(_definitions(lines, context, head))
            blocks = surrounding_blocks(chunk, head, settings.surrounding_lines,
                                        settings.max_enclosing_lines)
            blocks += definition_blocks(chunk, found[0])  # after the code around: less relevant
            room = self.requests.budget - cost(chunk.pieces) - FRAMING
            return replace(chunk, around="\n".join(self._within(blocks, room)))

        return surround

    def _within(self, blocks: list[str], room: int) -> list[str]:
        kept, used = [], 0
        for block, cost in zip(blocks, self.counter.count_texts(blocks) if blocks else []):
            if used + cost + 4 <= room:
                kept.append(block)
                used += cost + 4
        return kept


def _piece_cost(piece: Piece) -> int:
    return piece.tokens + 2  # its joining newline, and a merge across the boundary


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


def _definitions(lines: list[DiffLine], context: Context,
                 head: Callable[[str], list[str] | None]) -> list[Definition]:
    """Definitions of the names the change's added lines call, found once per review."""
    if context.definitions is None:
        return []
    added = [ln.text for ln in lines if ln.kind == "+"]
    shown = [ln.text for ln in lines if ln.kind != "-"]
    found: list[Definition] = context.definitions(called_names(added, defined_in(shown)), head)
    return found
