"""Property tests (hypothesis) for the parser, the chunker and the tool-call validator.

- no input makes `diff.parse` fail with anything but DiffError;
- for valid diffs of random contents (built with difflib, checked against the contents), the
  commentable sets are exactly the changed/context lines;
- the chunker's limits always hold and every reviewable changed line is owned exactly once;
- `answers.parse_calls` never raises, and every finding it returns is on a position the chunk shows.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from reviewbot import diff
from reviewbot.config import Settings
from reviewbot.context import Context, Intent
from reviewbot.diff import ChangeSet, Side
from reviewbot.engine import answers, tools
from reviewbot.engine.chunking import Chunk, file_header
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.packing import pack
from reviewbot.engine.tokens import EstimateTokenCounter, LocalTokenCounter, TokenCounter
from reviewbot.errors import DiffError
from tests.engine.pieces_support import make_pieces, owned_lines

FAST = settings(max_examples=80, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(FAST, max_examples=25)

ESTIMATE = EstimateTokenCounter()


@pytest.fixture(scope="module")
def local_counter(tokenizer_json: Path) -> LocalTokenCounter:
    return LocalTokenCounter(str(tokenizer_json))


# -- garbled input ---------------------------------------------------------------------------

FRAGMENTS = [
    "diff --git a/x.py b/x.py", "diff --git a/x.py b/y.py", 'diff --git "a/\\303\\251" "b/\\303\\251"',
    "--- a/x.py", "+++ b/x.py", "--- /dev/null", "+++ /dev/null", '--- "a/q\\"x"', '+++ "b/q\\"x"',
    '--- "a/\\x"', '+++ "b/tr\\"', "@@ -1 +1 @@", "@@ -1,3 +1,4 @@ def f():", "@@ -0,0 +1,2 @@",
    "@@ -5,2 +0,0 @@", "@@ -1,0 +1,0 @@", "+added", "-removed", " context", "", "+", "-", " ",
    "\\ No newline at end of file", "new file mode 100644", "deleted file mode 100755",
    "old mode 100644", "new mode 100755", "index 1234567..89abcde 100644", "index 0000000..1234567",
    "similarity index 90%", "rename from x.py", "rename to y.py", "Binary files a/x and b/x differ",
    "Binary files /dev/null and b/x differ", "GIT binary patch", "literal 12", "delta 7",
    "zcmV+b0ssF0{{8&>`uX_x", "Subproject commit 0123456789abcdef0123456789abcdef01234567",
    "From 0123 Mon Sep 17 00:00:00 2001", "Subject: [PATCH] x", "---", "-- ", "2.39.5",
    " x.py | 2 +-", "+line with\rcarriage", " ctx\x0cform\u2028sep", "+\x00nul", "-\ufffd",
]

diffish = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=40).map(
    "\n".join)


@FAST
@given(text=diffish, crlf=st.booleans(), trailing=st.booleans())
@example(text='--- "a/\\x"\n+++ "b/\\x"\n@@ -1 +1 @@\n-a\n+b', crlf=False, trailing=True)
@example(text='diff --git "a/tr\\" b/x\nold mode 100644\nnew mode 100755', crlf=False, trailing=True)
def test_garbled_diff_text_raises_only_diff_error(text: str, crlf: bool, trailing: bool) -> None:
    raw = text.replace("\n", "\r\n") if crlf else text
    raw += "\n" if trailing else ""
    try:
        changes = diff.parse(raw)
    except DiffError:
        return
    for file in changes.files:  # whatever parsed is usable
        assert isinstance(file.path, str)
        assert file.changed_lines >= 0
        for side, line in file.commentable:
            assert isinstance(side, Side) and line >= 0


@FAST
@given(data=st.binary(max_size=400))
def test_random_bytes_raise_only_diff_error(data: bytes) -> None:
    try:
        diff.parse(data)
    except DiffError:
        pass


VALID = (b"diff --git a/x.py b/x.py\nindex 1111111..2222222 100644\n--- a/x.py\n+++ b/x.py\n"
         b"@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n d\n"
         b"diff --git a/img.bin b/img.bin\nnew file mode 100644\nindex 0000000..3333333\n"
         b"GIT binary patch\nliteral 3\nKcmZQz00961\n\nliteral 0\nHcmV?d00001\n\n"
         b"diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\n--- \"a/caf\\303\\251.txt\"\n"
         b"+++ \"b/caf\\303\\251.txt\"\n@@ -1 +1 @@\n-x\n+y\n\\ No newline at end of file\n")


@FAST
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3), st.binary(max_size=6)),
                      max_size=6))
def test_mutated_valid_diffs_raise_only_diff_error(edits: list[tuple[int, int, bytes]]) -> None:
    assert diff.parse(VALID).changed_lines == 4
    data = bytearray(VALID)
    for pos, op, junk in edits:
        pos %= len(data) + 1
        if op == 0:
            del data[pos:pos + len(junk) + 1]
        elif op == 1:
            data[pos:pos] = junk
        elif op == 2:
            data[pos:pos + len(junk)] = junk
        else:
            data = data[:pos]
    try:
        diff.parse(bytes(data))
    except DiffError:
        pass


# -- valid diffs of random contents ----------------------------------------------------------

LINE_TEXT = st.sampled_from(
    ["a", "b", "c", "def f():", "    return 1", "", "x = 1\r", "caf\u00e9", "ff\x0cx", "ls\u2028x",
     "tab\there", "  # comment", "}", "+plus", "-minus", " space", "\\ backslash", "@@ -1 +1 @@"])
CONTENT = st.lists(LINE_TEXT, max_size=40)
NAMES = st.sampled_from(["a.py", "src/b.py", "lib/c d.js", "pkg/ünï.txt", "x/y/z.go", "m.c"])


@st.composite
def file_pairs(draw: st.DrawFn) -> list[tuple[str, list[str], list[str]]]:
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    out = []
    for name in names:
        old = draw(CONTENT)
        new = draw(st.one_of(CONTENT, st.just(old).map(list).flatmap(
            lambda lines: st.lists(st.integers(0, max(len(lines), 1)), max_size=4).map(
                lambda cuts: _edit(lines, cuts)))))
        if old != new:
            out.append((name, old, new))
    assume(out)
    return out


def _edit(lines: list[str], cuts: list[int]) -> list[str]:
    out = list(lines)
    for i, cut in enumerate(cuts):
        if i % 2:
            del out[cut:cut + 1]
        else:
            out[cut:cut] = [f"edited {i}"]
    return out


def make_diff(pairs: list[tuple[str, list[str], list[str]]], context: int) -> str:
    parts = []
    for name, old, new in pairs:
        body = list(difflib.unified_diff(old, new, f"a/{name}", f"b/{name}", n=context, lineterm=""))
        parts.append(f"diff --git a/{name} b/{name}\n" + "\n".join(body) + "\n")
    return "".join(parts)


def expected_positions(old: list[str], new: list[str], context: int) -> tuple[set, set, set]:
    """(added, removed, context) positions, from the same matcher difflib's unified_diff uses."""
    added, removed, shown_equal = set(), set(), set()
    for group in difflib.SequenceMatcher(None, old, new).get_grouped_opcodes(context):
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                shown_equal |= {(i + 1, j1 + (i - i1) + 1) for i in range(i1, i2)}
            if tag in ("replace", "delete"):
                removed |= {(Side.OLD, i + 1) for i in range(i1, i2)}
            if tag in ("replace", "insert"):
                added |= {(Side.NEW, j + 1) for j in range(j1, j2)}
    return added, removed, shown_equal


@FAST
@given(pairs=file_pairs(), context=st.integers(0, 4))
def test_commentable_sets_match_the_lines(pairs: list[tuple[str, list[str], list[str]]],
                                          context: int) -> None:
    changes = diff.parse(make_diff(pairs, context))
    assert len(changes.files) == len(pairs)
    for file, (name, old, new) in zip(changes.files, pairs):
        assert file.path == name
        added, removed, equal = expected_positions(old, new, context)
        lines = [l for h in file.hunks for l in h.lines]
        assert {(Side.NEW, l.new) for l in lines if l.kind == "+"} == added
        assert {(Side.OLD, l.old) for l in lines if l.kind == "-"} == removed
        assert {(l.old, l.new) for l in lines if l.kind == " "} == equal
        for l in lines:
            if l.old is not None:
                assert old[l.old - 1] == l.text
            if l.new is not None:
                assert new[l.new - 1] == l.text
        both = {(s, n) for o, nn in equal for s, n in ((Side.OLD, o), (Side.NEW, nn))}
        assert file.commentable == added | removed | both
        assert file.changed_lines == len(added) + len(removed)


# -- the chunker -----------------------------------------------------------------------------



@st.composite
def big_changes(draw: st.DrawFn) -> ChangeSet:
    pairs = draw(file_pairs())
    scale = draw(st.integers(1, 6))  # repeat contents to get hunks bigger than small limits
    pairs = [(name, old * scale, new * scale + [f"tail {i}" for i in range(scale)])
             for name, old, new in pairs]
    return diff.parse(make_diff(pairs, draw(st.integers(0, 4))))


@SLOW
@given(changes=big_changes(), limit=st.integers(150, 3000), context_lines=st.integers(0, 4),
       use_local=st.booleans())
def test_chunker_limits_hold_and_coverage_is_complete(
        local_counter: LocalTokenCounter, changes: ChangeSet, limit: int, context_lines: int,
        use_local: bool) -> None:
    counter: TokenCounter = local_counter if use_local else ESTIMATE
    pieces = make_pieces(changes, counter, limit, context_lines)
    assert sum(p.owned for p in pieces) == changes.changed_lines
    for file in changes.files:
        for hunk in file.hunks:
            mine = [p for p in pieces if p.hunk is hunk]
            assert owned_lines(mine) == list(hunk.lines)
    for piece in pieces:
        assert piece.tokens <= limit
        assert piece.tokens == counter.count_texts([piece.text])[0]

    fixed, overhead = 100, 10

    def file_tokens(f: diff.FileDiff) -> int:
        return counter.count_texts([file_header(f) + "\n"])[0]

    budget = limit + fixed + overhead + 40
    chunks = pack(pieces, budget, fixed, file_tokens, lambda p: p.tokens + overhead)
    assert sum(c.changed_lines for c in chunks) == changes.changed_lines
    assert sorted(id(p.lines) for c in chunks for p in c.pieces) == sorted(id(p.lines) for p in pieces)
    for chunk in chunks:
        files = {p.file.path: p.file for p in chunk.pieces}
        cost = fixed + sum(p.tokens + overhead for p in chunk.pieces) + sum(
            file_tokens(f) for f in files.values())
        assert cost <= budget


@SLOW
@given(changes=big_changes(), context=st.sampled_from([4096, 8192]), use_local=st.booleans(),
       verify=st.booleans())
def test_engine_requests_fit_the_context_and_cover_every_changed_line(
        local_counter: LocalTokenCounter, changes: ChangeSet, context: int, use_local: bool,
        verify: bool) -> None:
    counter: TokenCounter = local_counter if use_local else ESTIMATE
    context += 1024 * verify  # the second tool's schema is in every request
    settings = Settings(max_context=context, max_output_tokens=1024, verify=verify)
    engine = Engine(settings=settings, client=None,  # type: ignore[arg-type]
                    counter=counter, model="m", context=context)
    chunks = engine.fitting.chunks(changes, Context(Intent("title")))
    assert sum(c.changed_lines for c in chunks) == changes.changed_lines
    for chunk in chunks:
        messages, tool_list = engine.requests.request(chunk, Context(Intent("title")))
        size = counter.count_request(messages, tool_list)
        assert size + engine.requests.output_tokens(chunk.changed_lines) <= context


# -- tool calls ------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


def _chunk() -> Chunk:
    pairs = [("a.py", [f"l{i}" for i in range(30)], [f"l{i}" if i % 7 else f"m{i}" for i in range(30)]),
             ("src/b.py", ["x", "y", "z"], ["x", "z", "w"])]
    changes = diff.parse(make_diff(pairs, 2))
    return Chunk(1, tuple(make_pieces(changes, ESTIMATE, 10_000)))


CHUNK = _chunk()
ROWS = CHUNK.rows()


def finding_items() -> st.SearchStrategy[object]:
    item = st.fixed_dictionaries(
        {"title": st.text(max_size=20) | JSON, "row": st.integers(-5, 120) | JSON},
        optional={"end_row": st.integers(-5, 120) | JSON,
                  "severity": st.sampled_from(["info", "minor", "MAJOR", " critical ", "blocker",
                                               "fatal"]) | JSON,
                  "category": st.sampled_from(list(answers.CATEGORIES)) | JSON,
                  "body": st.text(max_size=20) | JSON, "suggestion": st.text(max_size=10) | JSON})
    return item | JSON


ARGUMENTS = st.one_of(
    st.fixed_dictionaries({"summary": st.text(max_size=20) | JSON,
                           "findings": st.lists(finding_items(), max_size=5) | JSON}).map(json.dumps),
    JSON.map(json.dumps),
    st.text(max_size=30),
)


@FAST
@given(calls=st.lists(st.tuples(st.sampled_from([tools.TOOL_NAME, "other_tool", ""]), ARGUMENTS),
                      max_size=4))
@example(calls=[(tools.TOOL_NAME, json.dumps(
    {"summary": "s", "findings": [{"title": "t", "row": [3]}]}))])
@example(calls=[(tools.TOOL_NAME, json.dumps(
    {"summary": "s", "findings": [{"title": "t", "row": True}]}))])
def test_parse_calls_never_raises_and_anchors_inside_the_chunk(calls: list[tuple[str, str]]) -> None:
    parsed = answers.parse_calls(calls, CHUNK, 50)
    shown = CHUNK.positions()
    for finding in parsed.findings:
        assert finding.path in shown
        assert (finding.side, finding.line) in shown[finding.path]
        if finding.end_line is not None:
            assert finding.end_line > finding.line
            assert (finding.side, finding.end_line) in shown[finding.path]
        if finding.suggestion is not None:
            assert finding.side is Side.NEW
        assert finding.title.strip() and finding.category in answers.CATEGORIES
    assert parsed.invalid >= 0 and parsed.reanchored <= len(parsed.findings)


@FAST
@given(items=st.lists(st.fixed_dictionaries({
    "title": st.just("t"), "severity": st.just("major"), "category": st.just("bug"),
    "body": st.just("b"), "row": st.integers(-3, 120)}), min_size=1, max_size=6))
def test_well_formed_findings_are_kept_or_reanchored_never_dropped(items: list[dict]) -> None:
    parsed = answers.parse_calls([(tools.TOOL_NAME, json.dumps({"summary": "s", "findings": items}))],
                               CHUNK, 50)
    assert parsed.invalid == 0 and len(parsed.findings) == len(items)
    shown = CHUNK.positions()
    for item, finding in zip(items, parsed.findings):
        assert (finding.side, finding.line) in shown[finding.path]
        if item["row"] in ROWS:  # a shown row lands exactly where that row is
            row = ROWS[item["row"]]
            assert (finding.path, finding.side, finding.line) == (row.file.path, row.side, row.number)
    assert parsed.reanchored == sum(1 for item in items if item["row"] not in ROWS)




def _suggested(end_row: int, text: str) -> str | None:
    """The suggestion kept for a finding on new lines 1..end_row-1 of thirty rewritten."""
    lines = [f"l{i}" for i in range(30)]
    changes = diff.parse(make_diff([("a.py", lines, [f"m{i}" for i in range(30)])], 2))
    chunk = Chunk(1, tuple(make_pieces(changes, ESTIMATE, 10_000)))
    item = {"title": "t", "severity": "major", "category": "bug", "body": "b", "row": 2,
            "end_row": end_row, "suggestion": text}
    parsed = answers.parse_calls([(tools.TOOL_NAME, json.dumps({"summary": "s",
                                                                 "findings": [item]}))], chunk, 50)
    assert [f.line for f in parsed.findings] == [1]
    return parsed.findings[0].suggestion


def test_a_short_suggestion_over_a_long_range_is_dropped() -> None:
    """Applied, one line offered for a long range would delete code the model never meant to
    touch; the finding stays, its suggestion goes."""
    assert _suggested(9, "a\nb\nc\n") == "a\nb\nc\n"  # 3 lines for 8
    assert _suggested(9, "x = 1\n") is None  # 1 line for 8
    assert _suggested(31, "a\nb\nc\n") is None  # 3 lines for 30
