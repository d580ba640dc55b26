"""Token-exact chunking, with a real tokenizer.json (byte-level BPE trained in a fixture) and with
the bytes-based estimate: hunks stay whole, an oversized hunk is split into parts that each carry
lead-in context and stay under the limit, every changed line is owned exactly once, and packing
keeps every request under the budget with close to the minimum number of chunks.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from reviewbot import diff
from reviewbot.choices import FindingsFormat
from reviewbot.config import Settings
from reviewbot.context import Context, Intent
from reviewbot.diff import ChangeSet, DiffLine, FileDiff
from reviewbot.engine import filters
from reviewbot.engine.chunking import Chunk, file_header, render_line
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.packing import pack
from reviewbot.engine.tokens import EstimateTokenCounter, LocalTokenCounter, TokenCounter
from tests.engine.pieces_support import make_pieces, owned_lines
from tests.git_support import GitRepo

WORDS = ("account", "user", "order", "total", "price", "item", "cache", "retry", "limit", "config",
         "path", "value", "result", "buffer", "index", "count", "name", "token", "session",
         "request", "response", "handler", "queue", "batch")


def py_source(rng: random.Random, functions: int) -> str:
    out = ["import os", "import json", "from dataclasses import dataclass", ""]
    for i in range(functions):
        a, b = rng.sample(WORDS, 2)
        out += [f"def {a}_{b}_{i}({a}, {b}=None):",
                f'    """Return the {a} for the given {b}."""',
                f"    if {b} is None:",
                f"        {b} = {rng.randint(0, 99)}",
                f"    result = [{a} * k for k in range({b})]",
                f"    return sum(result) + {rng.randint(0, 9)}",
                ""]
    return "\n".join(out) + "\n"


def mutate(rng: random.Random, text: str, rate: float) -> str:
    out: list[str] = []
    for line in text.split("\n")[:-1]:
        r = rng.random()
        if r < rate / 3:
            out.append(line.replace("k", "idx") + "  # changed")
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out += [line, f"    log.debug('{rng.choice(WORDS)}')"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def many_files(module_repos: Callable[[str], GitRepo]) -> ChangeSet:
    """A realistic diff: 40 modified Python files, changes scattered over many hunks, a few new."""
    rng = random.Random(7)
    repo = module_repos("many")
    sources = {f"pkg/mod{i:02d}/service_{i}.py": py_source(rng, rng.randint(20, 60)) for i in range(40)}
    for path, text in sources.items():
        repo.write(path, text)
    base = repo.commit()
    for path, text in sources.items():
        repo.write(path, mutate(rng, text, 0.03))
    for i in range(3):
        repo.write(f"pkg/new/added_{i}.py", py_source(rng, 30))
    head = repo.commit()
    return diff.parse(repo.diff(base, head))


@pytest.fixture(scope="module", params=["tokenizer.json", "estimate"])
def counter(request: pytest.FixtureRequest, tokenizer_json: Path) -> TokenCounter:
    if request.param == "estimate":
        return EstimateTokenCounter()
    return LocalTokenCounter(str(tokenizer_json))


def new_file_diff(path: str, lines: list[str]) -> ChangeSet:
    body = "".join(f"+{line}\n" for line in lines)
    return diff.parse(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
                      f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


def big_hunk_diff(lines: int = 1500) -> ChangeSet:
    """One modified file whose single hunk mixes context, removed and added lines."""
    old = [f"value_{i} = compute({i}, scale=2)" for i in range(lines)]
    new = [s.replace("scale=2", "scale=3") if i % 3 == 0 else s for i, s in enumerate(old)]
    new.insert(lines // 2, "inserted = True")
    import difflib

    text = "".join(l + "\n" for l in difflib.unified_diff(
        old, new, "a/big/module.py", "b/big/module.py", n=3, lineterm=""))
    return diff.parse("diff --git a/big/module.py b/big/module.py\n" + text)




# -- pieces ----------------------------------------------------------------------------------

def rendered(lines: Sequence[DiffLine], first_row: int) -> list[str]:
    """Rows on added lines and on the first line of each removed run, counted from first_row."""
    out, row = [], first_row
    for i, line in enumerate(lines):
        on = line.kind == "+" or (line.kind == "-" and (i == 0 or lines[i - 1].kind != "-"))
        out.append(render_line(line, row if on else None))
        row += on
    return out


def test_hunks_are_kept_whole_when_they_fit(many_files: ChangeSet, counter: TokenCounter) -> None:
    pieces = make_pieces(many_files, counter, 50_000)
    hunks = [(f, h) for f in many_files.files for h in f.hunks]
    assert len(hunks) > 150
    assert [(p.file, p.hunk) for p in pieces] == hunks
    for piece in pieces:
        assert piece.part is None and piece.lines == piece.hunk.lines
        assert piece.owned == piece.hunk.changed_lines
        assert piece.text == piece.hunk.header + "\n" + "\n".join(
            rendered(piece.lines, piece.first_row))
        assert piece.tokens == counter.count_texts([piece.text])[0] > 0
    assert sum(p.owned for p in pieces) == many_files.changed_lines


@pytest.mark.parametrize("limit", [300, 600, 2000])
def test_an_oversized_hunk_is_split_into_parts_under_the_limit(
        counter: TokenCounter, limit: int) -> None:
    changes = big_hunk_diff()
    (file,) = changes.files
    (hunk,) = file.hunks
    assert counter.count_texts([hunk.header + "\n" + "\n".join(rendered(hunk.lines, 1))])[0] > limit
    pieces = make_pieces(changes, counter, limit, context_lines=3)
    n = len(pieces)
    assert n >= 2
    assert [p.part for p in pieces] == [(k, n) for k in range(1, n + 1)]
    for k, piece in enumerate(pieces, 1):
        assert piece.hunk is hunk and piece.file is file
        assert piece.tokens <= limit, (k, piece.tokens)
        assert counter.count_texts([piece.text])[0] == piece.tokens
        assert piece.text.split("\n", 1)[0] == f"{hunk.header} (part {k} of {n})"
        if k > 1:  # lead-in context: the three lines before the part's own lines
            assert piece.lines[:3] == pieces[k - 2].lines[-3:]
    # every line of the hunk is owned exactly once, in order
    assert owned_lines(pieces) == list(hunk.lines)
    assert sum(p.owned for p in pieces) == hunk.changed_lines == file.changed_lines
    assert pieces[0].lead == 0 and all(0 < p.lead <= 3 for p in pieces[1:])


def test_only_the_oversized_hunk_is_split(many_files: ChangeSet, counter: TokenCounter) -> None:
    big = big_hunk_diff().files[0]
    changes = ChangeSet(many_files.files[:5] + (big,) + many_files.files[5:10])
    pieces = make_pieces(changes, counter, 1500)
    split = [p for p in pieces if p.part is not None]
    assert split and all(p.file is big for p in split)
    assert all(p.part is None and p.lines == p.hunk.lines for p in pieces if p.file is not big)
    assert sum(p.owned for p in pieces) == changes.changed_lines
    assert all(p.tokens <= 1500 for p in pieces)


@pytest.mark.parametrize("context_lines", [0, 1, 3, 5])
def test_every_changed_line_is_owned_exactly_once(counter: TokenCounter, context_lines: int) -> None:
    rng = random.Random(context_lines)
    lines = [f"x{i} = {rng.choice(WORDS)}({i})  # {'pad ' * rng.randint(0, 6)}" for i in range(600)]
    changes = new_file_diff("src/generated_table.py", lines)
    pieces = make_pieces(changes, counter, 500, context_lines=context_lines)
    assert len(pieces) > 3
    assert sum(p.owned for p in pieces) == changes.changed_lines == 600
    assert owned_lines(pieces) == list(changes.files[0].hunks[0].lines)
    assert all(p.tokens <= 500 for p in pieces)


def test_a_line_that_alone_exceeds_the_limit_is_cut_not_an_error(counter: TokenCounter) -> None:
    # it used to fail the whole review (DiffError); the context issue asks for a cut instead
    changes = new_file_diff("a.py", ["short = 1", "long = '" + "xyz " * 2000 + "'"])
    pieces = make_pieces(changes, counter, 200)
    assert all(p.tokens <= 200 for p in pieces) and sum(p.owned for p in pieces) == 2
    (long,) = [ln for p in pieces for ln in p.lines[p.lead:] if ln.new == 2]
    assert long.text.startswith("long = 'xyz xyz") and "more characters]" in long.text


# -- packing ---------------------------------------------------------------------------------

def chunk_cost(chunk: Chunk, fixed: int, file_tokens: Callable[[FileDiff], int], overhead: int) -> int:
    files = {p.file.path: p.file for p in chunk.pieces}
    return (fixed + sum(p.tokens + overhead for p in chunk.pieces)
            + sum(file_tokens(f) for f in files.values()))


@pytest.mark.parametrize("budget", [4000, 20_000, 60_000])
def test_pack_keeps_every_chunk_under_the_budget(many_files: ChangeSet, counter: TokenCounter,
                                                 budget: int) -> None:
    fixed, overhead = 300, 20

    def file_tokens(f: FileDiff) -> int:
        return counter.count_texts([file_header(f) + "\n"])[0] + 10

    pieces = make_pieces(many_files, counter, budget - fixed - overhead - 200)
    chunks = pack(pieces, budget, fixed, file_tokens, lambda p: p.tokens + overhead)
    assert [c.index for c in chunks] == list(range(1, len(chunks) + 1))
    for chunk in chunks:
        assert chunk.pieces
        assert chunk_cost(chunk, fixed, file_tokens, overhead) <= budget
    placed = [p for c in chunks for p in c.pieces]
    # each piece exactly once (renumbered: a new object, the same lines)
    assert sorted(id(p.lines) for p in placed) == sorted(id(p.lines) for p in pieces)
    assert sum(c.changed_lines for c in chunks) == many_files.changed_lines
    content = sum(p.tokens + overhead for p in pieces)
    minimum = math.ceil(content / (budget - fixed))
    assert len(chunks) <= math.floor(1.1 * minimum) + 1, (len(chunks), minimum)


# -- the engine's chunks: exact request sizes ------------------------------------------------

def engine(counter: TokenCounter, context: int, **settings: object) -> Engine:
    settings.setdefault("max_output_tokens", 1024)
    return Engine(settings=Settings(max_context=context, findings_format=FindingsFormat.TOOL,
                                    **settings), client=None,  # type: ignore[arg-type]
                  counter=counter, model="test-model", context=context)


def request_tokens(e: Engine, chunk: Chunk, title: str = "Add things") -> int:
    """The chunk's prompt tokens plus the answer's room beyond max_output_tokens."""
    messages, tool_list = e.requests.request(chunk, Context(Intent(title)))
    extra = e.requests.output_tokens(chunk.changed_lines) - e.settings.max_output_tokens
    return e.counter.count_request(messages, tool_list) + extra


_CHUNKED: dict[tuple[int, str, int], tuple[Engine, list[Chunk], list[int]]] = {}


def chunked(changes: ChangeSet, counter: TokenCounter, context: int) -> tuple[Engine, list[Chunk], list[int]]:
    """Engine.chunks of the reviewed files, with each chunk's exact request size (cached)."""
    key = (id(changes), counter.name, context)
    if key not in _CHUNKED:
        e = engine(counter, context)
        reviewed, _ = filters.split(changes)
        chunks = e.fitting.chunks(reviewed, Context(Intent("Add things")))
        _CHUNKED[key] = e, chunks, [request_tokens(e, c) for c in chunks]
    return _CHUNKED[key]


@pytest.mark.parametrize("context", [8192, 32768, 65536])
def test_engine_chunks_fit_the_context_and_cover_everything(
        many_files: ChangeSet, counter: TokenCounter, context: int) -> None:
    e, chunks, sizes = chunked(many_files, counter, context)
    assert chunks and [c.index for c in chunks] == list(range(1, len(chunks) + 1))
    assert max(sizes) + e.settings.max_output_tokens <= context, sizes
    assert max(sizes) <= e.requests.budget
    reviewed, _ = filters.split(many_files)
    assert sum(c.changed_lines for c in chunks) == reviewed.changed_lines
    placed = [(p.file.path, p.hunk.header, p.part) for c in chunks for p in c.pieces]
    assert len(placed) == len(set(placed))


@pytest.mark.parametrize("context", [8192, 32768, 65536])
def test_engine_chunk_count_is_within_ten_percent_of_the_minimum(
        many_files: ChangeSet, counter: TokenCounter, context: int) -> None:
    e, chunks, sizes = chunked(many_files, counter, context)
    # the fewest chunks that can carry these prompt tokens, the fixed part paid once per chunk
    fixed = request_tokens(e, Chunk(0, ()))
    content = sum(sizes) - fixed * len(chunks)
    minimum = math.ceil(content / (e.requests.budget - fixed))
    assert len(chunks) <= math.floor(1.1 * minimum) + 1, (
        f"{len(chunks)} chunks for a minimum of {minimum}; sizes {sorted(sizes)}")


def test_every_chunk_shows_the_file_header_with_each_file(counter: TokenCounter) -> None:
    changes = ChangeSet(big_hunk_diff().files + new_file_diff("docs/notes.py", ["a = 1"]).files)
    e = engine(counter, 4096)
    chunks = e.fitting.chunks(changes, Context(Intent("")))
    assert len(chunks) > 2
    for chunk in chunks:
        user = e.requests.messages(chunk, Context(Intent("")))[1]["content"]
        for file, pieces in chunk.by_file():
            assert file_header(file) in user
            for piece in pieces:
                assert piece.text in user


def test_system_prompt_and_tool_prefix_are_identical_across_chunks(
        many_files: ChangeSet, counter: TokenCounter) -> None:
    e = engine(counter, 8192)
    chunks = e.fitting.chunks(many_files, Context(Intent("t")))
    assert len(chunks) > 2
    systems, prefixes = set(), set()
    for chunk in chunks:
        messages, tool_list = e.requests.request(chunk, Context(Intent("t")))
        systems.add(messages[0]["content"])
        text = json.dumps(tool_list)
        # the per-chunk part is the findings cap and the rows, at the very end of the tools
        tail = text.index('"findings": {"type": "array"')
        assert text.index('"row": {"type": "integer"') > tail
        prefixes.add(text[:tail])
    assert len(systems) == 1 and len(prefixes) == 1


LONG_PATH = ("services/billing/src/main/java/com/example/platform/billing/infrastructure/"
             "persistence/jpa/repositories/customer/subscriptions/"
             "CustomerSubscriptionRepositoryImplementationIntegrationTest.java")


@pytest.mark.parametrize("context", [4096, 8192])
def test_a_split_hunk_of_a_long_path_still_fits_the_context(counter: TokenCounter, context: int) -> None:
    """Pieces are cut to `room`; the file header and the per-file anchor schema (which repeats the
    path) come on top. Even a single-piece chunk must not exceed the context."""
    lines = [f"        assertEquals(expected{i}, repository.findById({i}).orElseThrow());"
             for i in range(1200)]
    changes = new_file_diff(LONG_PATH, lines)
    e = engine(counter, context)
    chunks = e.fitting.chunks(changes, Context(Intent("Add integration tests")))
    sizes = [request_tokens(e, c, "Add integration tests") for c in chunks]
    assert max(sizes) + e.settings.max_output_tokens <= context, (max(sizes), context)
    assert sum(c.changed_lines for c in chunks) == 1200


def test_a_line_larger_than_a_request_is_shown_cut_never_a_failure() -> None:
    """One dense line (an inline SVG path) bigger than the whole budget: the review goes on,
    the line is shown cut short and says so, and every changed line is still owned once."""
    svg = "<path d=\"" + " ".join(f"M{i} {i}L{i + 1} {i * 7}" for i in range(1500)) + "\"/>"
    raw = (f"diff --git a/logo.svg b/logo.svg\n--- a/logo.svg\n+++ b/logo.svg\n@@ -1,3 +1,3 @@\n"
           f" <svg>\n-<path/>\n+{svg}\n </svg>\n").encode()
    changes = diff.parse(raw)
    counter = EstimateTokenCounter()
    pieces = make_pieces(changes, counter, 600)
    assert all(p.tokens <= 600 for p in pieces)
    assert sum(p.owned for p in pieces) == changes.changed_lines == 2
    cut = next(ln for p in pieces for ln in p.lines[p.lead:] if ln.kind == "+")
    assert cut.text.startswith("<path d=\"M0 0L1 0") and "more characters]" in cut.text
    assert len(cut.text) < len(svg)


def test_chunk_tokens_makes_smaller_review_units_within_the_same_context(
        many_files: ChangeSet, counter: TokenCounter) -> None:
    whole = engine(counter, 8192)
    units = engine(counter, 8192, chunk_tokens=3000)
    assert units.requests.budget == 3000 < whole.requests.budget
    big, small = whole.fitting.chunks(many_files, Context()), units.fitting.chunks(many_files, Context())
    assert len(small) > len(big)
    assert sum(c.changed_lines for c in small) == many_files.changed_lines
    assert all(request_tokens(units, c, title="") <= 3000 for c in small)


def test_a_removed_line_of_digits_cannot_pose_as_a_row(counter: TokenCounter) -> None:
    """Removed code that reads like a label (`-7 evil`, `-12|x`) after the run's first line:
    the prompt shows it without a row, and no line but the labelled ones looks like one."""
    text = ("diff --git a/data.txt b/data.txt\n--- a/data.txt\n+++ b/data.txt\n"
            "@@ -1,5 +1,2 @@\n keep\n-first\n-7 evil\n-12|x\n-3\n+new\n")
    (piece,) = make_pieces(diff.parse(text), counter, 10_000)
    chunk = Chunk.numbered(1, [piece])
    body = chunk.pieces[0].text.split("\n")[1:]
    assert body == [" keep", "-1 first", "- 7 evil", "- 12|x", "- 3", "+2 new"]
    looks_labelled = [ln for ln in body if re.match(r"^[-+]\d+ ", ln)]
    assert looks_labelled == ["-1 first", "+2 new"]
    assert sorted(chunk.rows()) == [1, 2]


def test_a_line_longer_than_the_unit_that_fits_the_context_is_reviewed_whole_alone(
        counter: TokenCounter) -> None:
    """Issue 36: a changed line longer than a review unit (chunk_tokens) but within the model's
    context gets a request of its own, whole; only a line longer than the context is cut."""
    units = engine(counter, 16384, chunk_tokens=3000)
    fits = "data = '" + " ".join(f"k{i}:v{i * 7}" for i in range(1200)) + "'"
    beyond = "blob = '" + " ".join(f"z{i}:w{i * 3}" for i in range(9000)) + "'"
    lines = [f"x{i} = {i}" for i in range(40)]
    changes = new_file_diff("a.py", [*lines[:20], fits, *lines[20:], beyond])
    assert 3000 < counter.count_texts([fits])[0] < units.requests.whole_budget
    assert counter.count_texts([beyond])[0] > units.requests.whole_budget
    chunks = units.fitting.chunks(changes, Context())
    assert sum(c.changed_lines for c in chunks) == changes.changed_lines == 42
    shown = {ln.new: ln.text for c in chunks for p in c.pieces for ln in p.lines[p.lead:]}
    assert shown[21] == fits  # whole
    assert shown[42].startswith("blob = 'z0:w0") and "more characters]" in shown[42]
    alone = [c for c in chunks if any(p.alone for p in c.pieces)]
    assert len(alone) == 2 and all(len(c.pieces) == 1 for c in alone)
    assert [c.cut[0] for c in alone] == [0, 1]
    for chunk in chunks:
        limit = units.requests.whole_budget if chunk in alone else 3000
        assert request_tokens(units, chunk, title="") <= limit
        assert request_tokens(units, chunk, title="") + 1024 <= 16384
