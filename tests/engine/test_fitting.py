"""Fitting a large change: its lead is counted, packed and sent before the rest is counted,
and the chunks still cover every changed line once, each within its exact budget."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from reviewbot import diff
from reviewbot.choices import FindingsFormat
from reviewbot.config import Settings
from reviewbot.context import Context, Intent
from reviewbot.diff import ChangeSet
from reviewbot.engine import fitting
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.fitting import LEAD_CHARS_PER_TOKEN, LEAD_UNITS
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import LocalTokenCounter, Messages, Tools

CONTEXT = 8192
INTENT = Context(Intent("Add things"))


class Recording(LocalTokenCounter):
    """A tokenizer.json counter whose request counts fitting checks (as it checks the
    server's), keeping every text it counted."""

    exact = True

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.counted: list[str] = []
        self.requests = 0  # whole requests counted

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        self.counted += texts
        return super().count_texts(texts)

    def count_request(self, messages: Messages, tools: Tools) -> int:
        self.requests += 1
        return super().count_request(messages, tools)


def new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


@pytest.fixture(scope="module")
def large() -> ChangeSet:
    """60 new files, and first in unit order one whose single hunk no chunk can hold."""
    big = [f"value_{i} = compute({i}, scale=3)  # the first file's hunk" for i in range(1500)]
    files = [new_file("a_first/module.py", big)]
    files += [new_file(f"pkg/m{i:02d}/service.py",
                       [f"def handler_{i}_{k}(request, limit={k}):" for k in range(80)])
              for i in range(60)]
    return diff.parse("".join(files))


def make(tokenizer_json: Path, **settings: object) -> Engine:
    counter = Recording(str(tokenizer_json))
    # sized for the forced call's requests (its tools are part of every one)
    return Engine(settings=Settings(**{"max_context": CONTEXT, "max_output_tokens": 1024,
                                       "findings_format": FindingsFormat.TOOL, **settings}),
                  client=None,  # type: ignore[arg-type]
                  counter=counter, model="test-model", context=CONTEXT)


@pytest.fixture
def engine(tokenizer_json: Path) -> Engine:
    return make(tokenizer_json)


def request_tokens(e: Engine, chunk: Chunk) -> int:
    messages, tool_list = e.requests.request(chunk, INTENT)
    return e.counter.count_request(messages, tool_list) + e.requests.extra_output(
        chunk.changed_lines)


def chars(changes: ChangeSet) -> int:
    return sum(len(ln.text) + 2 for f in changes.files for h in f.hunks for ln in h.lines)


def test_the_first_chunk_goes_out_before_the_rest_of_a_large_change_is_counted(
        engine: Engine, large: ChangeSet) -> None:
    counter = engine.counter
    assert isinstance(counter, Recording)
    lead = LEAD_UNITS * engine.requests.budget * LEAD_CHARS_PER_TOKEN
    assert chars(large) > 3 * lead
    fitted = engine.fitting.fitted(large, INTENT)
    first = next(fitted.chunks)
    assert first.index == 1 and not first.whole
    # the file headers, the lead's hunks and the lead's chunks: nothing of the last files, nor
    # of the hunk that has to be split line by line
    assert not any("handler_50_" in text or "value_1499 " in text for text in counter.counted)
    chunks = [first, *fitted.chunks]
    assert any("handler_59_" in text for text in counter.counted)
    assert abs(fitted.estimate - len(chunks)) <= 0.25 * len(chunks), fitted.estimate


def test_a_large_change_fitted_lead_first_covers_every_line_within_budget(
        engine: Engine, large: ChangeSet, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = engine.fitting.chunks(large, INTENT)
    assert [c.index for c in chunks] == list(range(1, len(chunks) + 1))
    assert sum(c.changed_lines for c in chunks) == large.changed_lines
    placed = [(p.file.path, p.hunk.header, p.part) for c in chunks for p in c.pieces]
    assert len(placed) == len(set(placed))
    sizes = [request_tokens(engine, c) for c in chunks]
    assert max(sizes) <= engine.requests.budget
    # the lead's hunk too large for a chunk was split with the rest, none of it cut
    assert any(p.part for c in chunks for p in c.pieces if p.file.path == "a_first/module.py")
    assert sum(c.cut[0] for c in chunks) == 0
    # the lead costs at most one chunk beyond packing the whole change at once
    monkeypatch.setattr(fitting, "LEAD_UNITS", 1000)
    at_once = engine.fitting.chunks(large, INTENT)
    assert len(chunks) <= len(at_once) + 1, (len(chunks), len(at_once))


def test_chunks_well_inside_the_context_go_on_their_estimate_and_still_fit_their_unit(
        tokenizer_json: Path, large: ChangeSet) -> None:
    """Units a quarter of the context: no chunk's whole request is counted before it goes
    (only the fixed part, once), and each one's exact size is still within the unit: packing
    over-counts."""
    units = make(tokenizer_json, chunk_tokens=2048)
    chunks = units.fitting.chunks(large, INTENT)
    counter = units.counter
    assert isinstance(counter, Recording) and counter.requests == 1
    assert len(chunks) > 10 and sum(c.changed_lines for c in chunks) == large.changed_lines
    assert max(request_tokens(units, c) for c in chunks) <= 2048


def test_only_the_chunks_that_come_near_the_context_are_counted_exactly(
        engine: Engine, large: ChangeSet) -> None:
    """Units as large as the context: the chunks packed within EXACT_NEAR of it are counted
    (and cut) exactly, the rest go on their estimate, and every one fits."""
    chunks = engine.fitting.chunks(large, INTENT)
    counter = engine.counter
    assert isinstance(counter, Recording) and 1 < counter.requests < 1 + len(chunks)
    assert max(request_tokens(engine, c) for c in chunks) <= engine.requests.budget


def test_the_code_around_each_chunk_is_sized_without_counting_its_request_again(
        tokenizer_json: Path) -> None:
    """A merge request's review with its head files: the chunks get the code around their
    hunks in the room their estimates leave, no chunk's request is counted for it, and the
    chunks with that code still fit their unit."""
    base = "".join(f"def step_{i}(value):\n    return value + {i}\n" for i in range(400)).split("\n")
    changed = range(11, 790, 20)
    head = [line + "  # checked" if n in changed else line for n, line in enumerate(base)]
    changes = diff.parse("diff --git a/steps.py b/steps.py\n--- a/steps.py\n+++ b/steps.py\n"
                         + "".join(f"@@ -{n},3 +{n},3 @@\n {base[n - 1]}\n-{base[n]}\n+{head[n]}\n"
                                   f" {base[n + 1]}\n" for n in changed))
    units = make(tokenizer_json, chunk_tokens=3072)
    context = Context(INTENT.intent, files={"steps.py": "\n".join(head)}.get)
    chunks = list(units.fitting.stream(changes, context).chunks)
    counter = units.counter
    assert isinstance(counter, Recording) and counter.requests == 1
    assert len(chunks) > 1 and any(c.around for c in chunks)
    sizes = [counter.count_request(*units.requests.request(c, context))
             + units.requests.extra_output(c.changed_lines) for c in chunks]
    assert max(sizes) <= 3072


def test_a_part_cut_again_says_which_piece_of_that_part_it_is(tokenizer_json: Path,
                                                              large: ChangeSet) -> None:
    """With the free JSON answer (no tools: more room) fitting cuts the large hunk's parts
    again; each piece's header stays true ("part 1 of 2, piece 3 of 6"), none is repeated."""
    chunks = make(tokenizer_json, findings_format=FindingsFormat.JSON).fitting.chunks(large, INTENT)
    pieces = [p for c in chunks for p in c.pieces]
    placed = [(p.file.path, p.hunk.header, p.part) for p in pieces]
    assert len(placed) == len(set(placed))
    assert sum(c.changed_lines for c in chunks) == large.changed_lines
    cut_again = [p for p in pieces if p.part is not None and len(p.part) == 4]
    assert cut_again, "no part was cut again: the case no longer tests it"
    for p in cut_again:
        k, n, j, m = p.part  # type: ignore[misc]
        assert p.text.split("\n", 1)[0].endswith(f" (part {k} of {n}, piece {j} of {m})")
        assert 1 <= j <= m and 1 <= k <= n
