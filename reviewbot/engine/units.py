"""Review units: which changed files belong in one request.

A file and its tests are reviewed together (`foo.py` with `test_foo.py`, `foo_test.go`,
`foo.test.ts`, `FooTest.java`, …), code before its tests: the model checks a change against
the tests that pin it down, and a test change against the code it tests. Files of one directory
follow each other, so that first-fit packing keeps them in one request when they fit.

Pairing is by name only, the way a reader guesses it: a test's subject is its name without the
test affixes, in the same language family; it pairs with the one changed code file of that
name (or, when several share it, the one in the test's own directory).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from reviewbot.diff import FileDiff, Hunk

_FAMILY = {"ts": "js", "tsx": "js", "js": "js", "jsx": "js", "mjs": "js", "cjs": "js",
           "c": "c", "cc": "c", "cpp": "c", "cxx": "c", "h": "c", "hh": "c", "hpp": "c",
           "java": "jvm", "kt": "jvm", "scala": "jvm"}
# a test's name: its subject in group "s"
_TEST_NAMES = [re.compile(p) for p in (
    r"test_(?P<s>.+)",  # test_foo.py, test_foo.rb, test_foo.c
    r"(?P<s>.+?)_(?:test|tests|spec|unittest)",  # foo_test.go, foo_spec.rb, foo_unittest.cc
    r"(?P<s>.+?)\.(?:test|spec)",  # foo.test.ts, foo.spec.js
    r"(?P<s>[A-Z]\w*?)(?:Test|Tests|Spec|IT)",  # FooTest.java, FooTests.cs, FooSpec.scala
    r"Test(?P<s>[A-Z]\w*)",  # TestFoo.java
)]
_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testing"}


def family(path: str) -> str:
    ext = posixpath.splitext(path)[1].lstrip(".").lower()
    return _FAMILY.get(ext, ext)


def subject_of(path: str) -> str | None:
    """The name of the code a test file tests (None: not a test by its name or directory)."""
    directory, base = posixpath.split(path)
    stem = _stem(path)
    full = posixpath.splitext(base)[0]  # foo.test for foo.test.ts
    for pattern in _TEST_NAMES:
        if m := pattern.fullmatch(full) or pattern.fullmatch(stem):
            return m.group("s")
    if _TEST_DIRS & set(directory.split("/")):  # tests/foo.rs, __tests__/foo.ts
        return stem
    return None


def _stem(path: str) -> str:
    base = posixpath.basename(path)
    return base.split(".", 1)[0] if family(path) == "js" else posixpath.splitext(base)[0]


def pairs(files: Sequence[FileDiff]) -> dict[str, str]:
    """Each test file's code file, among `files` (test path -> code path)."""
    code: dict[tuple[str, str], list[str]] = {}
    tests: list[tuple[str, str]] = []
    for f in files:
        subject = subject_of(f.path)
        if subject is None:
            code.setdefault((_stem(f.path), family(f.path)), []).append(f.path)
        else:
            tests.append((f.path, subject))
    out = {}
    for path, subject in tests:
        candidates = code.get((subject, family(path)), [])
        here = [c for c in candidates if posixpath.dirname(c) == posixpath.dirname(path)]
        chosen = candidates if len(candidates) == 1 else here
        if len(chosen) == 1:
            out[path] = chosen[0]
    return out


def unit_order(files: Sequence[FileDiff]) -> dict[str, tuple[str, int, int]]:
    """A sort key per path: by the directory and name of the unit's code file, the code
    before its tests, then the diff's order."""
    tested = pairs(files)
    position = {f.path: i for i, f in enumerate(files)}
    return {f.path: (tested.get(f.path, f.path), int(f.path in tested), position[f.path])
            for f in files}


def split_pairs(files: Sequence[FileDiff], chunk_paths: Sequence[set[str]]) -> tuple[int, int]:
    """(pairs, pairs whose files went to different requests)."""
    tested = pairs(files)
    split = sum(1 for test, code in tested.items()
                if not any(test in paths and code in paths for paths in chunk_paths))
    return len(tested), split


Hunks = list[tuple[FileDiff, Hunk]]


def diff_chars(hunks: Hunks) -> int:
    return sum(len(ln.text) + 2 for _, h in hunks for ln in h.lines)


def lead_units(files: Sequence[FileDiff], tested: dict[str, str],
               place: dict[str, tuple[str, int, int]], chars: int,
               largest: int) -> tuple[Hunks, Hunks]:
    """The hunks of the first whole review units in unit order, about `chars` characters of
    diff, and the rest. A hunk larger than `largest` characters stays with the rest: splitting
    it counts every line."""
    lead: Hunks = []
    rest: Hunks = []
    size, unit = 0, None
    for file in sorted(files, key=lambda f: place[f.path]):
        if size >= chars and tested.get(file.path, file.path) != unit:
            rest += [(file, h) for h in file.hunks]
            continue
        unit = tested.get(file.path, file.path)
        for hunk in file.hunks:
            hunk_chars = diff_chars([(file, hunk)])
            large = hunk_chars > largest
            (rest if large else lead).append((file, hunk))
            size += 0 if large else hunk_chars
    return lead, rest
