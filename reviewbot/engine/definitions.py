"""Definitions from other files, targeted: for names that added lines call or construct and that
the chunk does not define itself, their signature and the start of their body, found in the
head tree with one `git grep` per review for every name, then:
- in a file a tree-sitter grammar covers (Python, JavaScript, TypeScript, Go, Rust, Java), by
  its syntax tree: every function, method, class, struct, enum, trait, interface, type and
  function-valued `const` whose name is one of them (Java methods, `const f = () =>`, Go
  methods with receivers: what a line regexp misses);
- elsewhere by a line regexp on the hit (`def`, `func`, `fn`, `class`, … NAME), cut at the
  definition's end with the same parser as the code around a hunk.

The head tree is a revision of a local clone or an unpacked archive of the forge's
(reviewbot.flow.headtree): the same search for `--git`, `--mr` and `--pr`.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from reviewbot.engine.surroundings import enclosing, syntax_tree
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


def git_finder(rev: str | None, cwd: str | None = None, no_index: bool = False,
               syntax: bool = True) -> Callable[[list[str], Reader], list[Definition]]:
    """Definitions of `names` at `rev` (None: the working tree; with `no_index`, every file
    under `cwd`), by one `git grep` (with `syntax`, read by tree-sitter where a grammar covers
    the file). The hits' text is only matched; what reaches the prompt is read again through
    `read` (the safe reader of reviewbot.tree), so a name that poses as `path:line:` cannot
    point elsewhere."""
    def find(names: list[str], read: Reader) -> list[Definition]:
        if not names:
            return []
        places: dict[str, list[tuple[str, int, int]]] = {}
        parsed: set[str] = set()
        # sorted: a revision and an unpacked archive (`--no-index`) list files in other orders
        hits = sorted(git_grep([r"\b(" + "|".join(map(re.escape, names)) + r")\b"], rev, cwd,
                               no_index))
        for path in dict.fromkeys(p for p, _, _ in hits):
            lines = read(path) if syntax and len(parsed) < MAX_PARSED_FILES else None
            tree = syntax_tree(lines, path) if lines is not None else None
            if tree is not None and lines is not None:
                parsed.add(path)
                for name, first, last in _named_definitions(tree, set(names)):
                    places.setdefault(name, []).append((path, first, last))
        for path, number, text in hits:  # files no grammar covers: the line regexp
            if path in parsed:
                continue
            for name in names:
                if re.match(_DEFINES + re.escape(name) + r"\b", text):
                    places.setdefault(name, []).append((path, number, 0))
        return [d for name in names if 0 < len(places.get(name, [])) <= MAX_HITS_PER_NAME
                for d in _bodies(name, places[name], read)]
    return find


MAX_PARSED_FILES = 60  # per review: files with a hit read by their syntax tree
MAX_NODES = 200_000  # per file: nodes walked
# named definitions of the grammars in reviewbot.engine.surroundings
_NAMED = frozenset({
    "function_definition", "class_definition",  # Python
    "function_declaration", "generator_function_declaration", "class_declaration",
    "abstract_class_declaration", "method_definition", "interface_declaration",
    "type_alias_declaration", "enum_declaration",  # JavaScript, TypeScript
    "method_declaration", "type_spec",  # Go (function_declaration above)
    "function_item", "struct_item", "enum_item", "trait_item", "type_item", "union_item",  # Rust
    "constructor_declaration", "record_declaration",  # Java (class, method, enum, interface above)
})
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function"})


def _named_definitions(tree: Any, names: set[str]) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every definition of one of `names` in the tree."""
    out: list[tuple[str, int, int]] = []
    stack, walked = [tree.root_node], 0
    while stack and walked < MAX_NODES:
        node = stack.pop()
        walked += 1
        named = node.child_by_field_name("name") if node.type in _NAMED else None
        if node.type == "variable_declarator":  # const f = () => …
            value = node.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                named = node.child_by_field_name("name")
        if named is not None and named.text is not None:
            name = named.text.decode("utf-8", "replace")
            if name in names:
                out.append((name, node.start_point[0] + 1, node.end_point[0] + 1))
        stack.extend(reversed(node.children))
    return out


def _bodies(name: str, places: list[tuple[str, int, int]], read: Reader) -> list[Definition]:
    """Each place's signature and first BODY_LINES lines (`last` 0: found by the regexp, cut
    at the end the code-around parser gives)."""
    out = []
    for path, number, last in places:
        lines = read(path)
        if lines is None or number > len(lines):
            continue
        if not last:
            span = enclosing(lines, path, number, number)
            last = span.last if span is not None and span.first == number else number
        last = min(last, number + BODY_LINES - 1)
        out.append(Definition(name, path, number, last, tuple(lines[number - 1:last])))
    return out
