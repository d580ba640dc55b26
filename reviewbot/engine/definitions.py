"""Definitions from other files, targeted: for names that added lines call or construct and that
the chunk does not define itself, their signature and the start of their body, found in the
head tree with `git grep` (one call per review for every name) and cut at the definition's end
with the same parser as the code around a hunk.

The head tree is a revision of a local clone or an unpacked archive of the forge's
(reviewbot.headtree): the same search for `--git`, `--mr` and `--pr`.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from reviewbot.engine.surroundings import enclosing
from reviewbot.tree import git_grep

MAX_NAMES = 40  # per review: the names searched for
MAX_HITS_PER_NAME = 2  # an ambiguous name (defined in many files) is not worth the budget
BODY_LINES = 15  # the signature and the first lines of the body

_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w{2,})\s*\(|\.([A-Za-z_]\w{2,})\s*\(")
_COMMON = frozenset({
    "print", "len", "range", "str", "int", "float", "bool", "dict", "list", "set", "tuple",
    "isinstance", "getattr", "setattr", "hasattr", "super", "open", "format", "append", "extend",
    "join", "split", "strip", "get", "items", "keys", "values", "update", "sorted", "min", "max",
    "sum", "any", "all", "map", "filter", "zip", "enumerate", "repr", "type", "object", "Exception",
    "ValueError", "TypeError", "KeyError", "RuntimeError", "func", "function", "return", "new",
    "console", "log", "push", "then", "catch", "require", "println", "printf", "make", "Error", "Errorf", "Sprintf", "String", "unwrap", "expect", "clone", "into", "from", "to_string",
})
_DEFINES = (r"^\s*(export\s+)?(default\s+)?(pub(\([a-z]+\))?\s+)?(async\s+)?"
            r"(def|class|function|func|fn|struct|enum|trait|interface|type)\s+(\([^)]*\)\s*)?")


@dataclass(frozen=True)
class Definition:
    name: str
    path: str
    first: int  # 1-based lines in the head file
    last: int
    lines: tuple[str, ...]


def called_names(added: Iterable[str], defined_here: Iterable[str]) -> list[str]:
    """Names the added lines call, most frequent first, without keywords, very common
    builtins and methods, and names the chunk defines itself."""
    counts: dict[str, int] = {}
    for line in added:
        for m in _CALL.finditer(line):
            name = m.group(1) or m.group(2)
            if name not in _COMMON and not keyword.iskeyword(name):
                counts[name] = counts.get(name, 0) + 1
    own = set(defined_here)
    ranked = sorted((n for n in counts if n not in own), key=lambda n: (-counts[n], n))
    return ranked[:MAX_NAMES]


def defined_in(lines: Iterable[str]) -> set[str]:
    pattern = re.compile(_DEFINES + r"([A-Za-z_]\w*)")
    return {m.group(8) for line in lines if (m := pattern.match(line))}


Reader = Callable[[str], "list[str] | None"]  # a head file's lines


def git_finder(rev: str | None, cwd: str | None = None, no_index: bool = False
               ) -> Callable[[list[str], Reader], list[Definition]]:
    """Definitions of `names` at `rev` (None: the working tree; with `no_index`, every file
    under `cwd`), by one `git grep`. The hits' text is only matched; what reaches the prompt is read again through `read` (the safe
    reader of reviewbot.tree), so a name that poses as `path:line:` cannot point elsewhere."""
    def find(names: list[str], read: Reader) -> list[Definition]:
        patterns = [_DEFINES + re.escape(name) + r"\b" for name in names]
        hits: dict[str, list[tuple[str, int]]] = {}
        for where, line_no, text in git_grep(patterns, rev, cwd, no_index):
            for name, pattern in zip(names, patterns):
                if re.match(pattern, text):
                    hits.setdefault(name, []).append((where, line_no))
        out = []
        for name in names:
            places = hits.get(name, [])
            if not 0 < len(places) <= MAX_HITS_PER_NAME:
                continue
            for path, number in places:
                lines = read(path)
                if lines is None or number > len(lines):
                    continue
                span = enclosing(lines, path, number, number)
                last = span.last if span is not None and span.first == number else number
                last = min(last, number + BODY_LINES - 1)
                out.append(Definition(name, path, number, last, tuple(lines[number - 1:last])))
        return out
    return find
