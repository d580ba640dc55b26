"""Packing pieces into chunks, in memory with the byte estimate for a tokenizer: every piece in
exactly one chunk, no chunk over the budget by the packer's own reckoning, a file and its test
together when they fit, big hunks placed first, rows numbered from 1 in each chunk."""

from __future__ import annotations

from reviewbot.diff import ChangeSet, parse
from reviewbot.engine.chunking import Chunk, Piece
from reviewbot.engine.packing import chunk_cost, pack
from reviewbot.engine.tokens import EstimateTokenCounter
from tests.engine.pieces_support import make_pieces

COUNTER = EstimateTokenCounter()


def _tokens(text: str) -> int:
    return COUNTER.count_texts([text])[0]

FIXED = 300


def _file(path: str, hunks: int, lines: int) -> str:
    out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    for h in range(hunks):
        start = 1 + h * 100
        out.append(f"@@ -{start},{lines} +{start},{lines} @@")
        out += [f"-    value_{h}_{n} = compute({n})" for n in range(lines)]
        out += [f"+    value_{h}_{n} = compute({n} + 1)" for n in range(lines)]
    return "\n".join(out) + "\n"


def _pieces(changes: ChangeSet) -> list[Piece]:
    return make_pieces(changes, COUNTER, 100_000)


def _pack(pieces: list[Piece], budget: int, **kw: object) -> list[Chunk]:
    return pack(pieces, budget, FIXED, lambda f: _tokens(f.path) + 10,
                lambda p: p.tokens or _tokens(p.text), **kw)  # type: ignore[arg-type]


def _cost(chunk: Chunk) -> int:
    return chunk_cost(chunk.pieces, FIXED, lambda f: _tokens(f.path) + 10,
                      lambda p: p.tokens or _tokens(p.text), lambda changed: 0)


CHANGE = parse("".join(_file(f"src/m{n}.py", hunks=1 + n % 3, lines=2 + 3 * (n % 4))
                       for n in range(12)))


def test_every_piece_in_exactly_one_chunk_and_none_over_the_budget() -> None:
    pieces = _pieces(CHANGE)
    chunks = _pack(pieces, 2000)
    packed = [(p.file.path, p.hunk.new_start) for c in chunks for p in c.pieces]
    assert sorted(packed) == sorted((p.file.path, p.hunk.new_start) for p in pieces)
    assert len(chunks) > 1 and all(_cost(c) <= 2000 for c in chunks)


def test_rows_run_from_one_in_every_chunk() -> None:
    for chunk in _pack(_pieces(CHANGE), 2000):
        assert sorted(chunk.rows()) == list(range(1, len(chunk.rows()) + 1))


def test_a_file_and_its_test_stay_together_when_they_fit() -> None:
    change = parse(_file("src/a.py", 1, 3) + _file("src/b.py", 2, 6) + _file("tests/test_a.py",
                                                                               1, 3))
    units = {"src/a.py": "a", "tests/test_a.py": "a", "src/b.py": "b"}
    pieces = _pieces(change)
    one_file = max(_cost(Chunk.numbered(1, [p])) for p in pieces)
    chunks = _pack(pieces, one_file + 150, unit=units.__getitem__)
    together = [c for c in chunks if {p.file.path for p in c.pieces} >= {"src/a.py",
                                                                           "tests/test_a.py"}]
    assert len(together) == 1


def test_big_hunks_first_take_no_more_chunks_than_the_sizes_demand() -> None:
    big = [_file(f"big{n}.py", 1, 18) for n in range(3)]
    small = [_file(f"small{n}.py", 1, 1) for n in range(12)]
    pieces = _pieces(parse("".join(small[:6] + big + small[6:])))
    budget = 2 * max(_cost(Chunk.numbered(1, [p])) for p in pieces)
    total = sum(p.tokens or _tokens(p.text) for p in pieces)
    chunks = _pack(pieces, budget)
    assert len(chunks) <= -(-total // (budget - FIXED - 200)) + 1  # within one of the minimum
