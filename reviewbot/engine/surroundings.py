"""The code around a change: each hunk's enclosing function or class in the file at the head
commit, or at least `pad` lines above and below it (pure, but for the parser libraries).

Enclosing definitions come from tree-sitter (the tree-sitter organisation's prebuilt grammar
packages, imported on first use; a language whose package is missing falls back); other files
fall back to indentation and braces. What is returned are line ranges of the new file outside
the hunk: context for the model, never anchors.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from reviewbot.engine.chunking import Chunk
from reviewbot.engine.prompttext import defuse, label

# file suffix → (grammar module, its language function)
_GRAMMARS = {
    ".py": ("tree_sitter_python", "language"),
    ".js": ("tree_sitter_javascript", "language"), ".jsx": ("tree_sitter_javascript", "language"),
    ".mjs": ("tree_sitter_javascript", "language"), ".cjs": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
    ".java": ("tree_sitter_java", "language"),
}
# node types that enclose code a reviewer reads as one unit
_DEFINITIONS = frozenset({
    "function_definition", "class_definition", "decorated_definition",  # Python
    "function_declaration", "method_definition", "class_declaration", "arrow_function",
    "function_expression", "generator_function_declaration", "interface_declaration",
    "method_declaration", "type_declaration",  # Go
    "function_item", "impl_item", "struct_item", "enum_item", "trait_item", "mod_item",  # Rust
    "constructor_declaration", "enum_declaration", "record_declaration",  # Java
})


@dataclass(frozen=True)
class Span:
    first: int  # 1-based, inclusive, new-file lines
    last: int


@cache
def _parser(suffix: str) -> Any:
    """A tree-sitter parser for this file suffix, or None (no grammar package installed)."""
    spec = _GRAMMARS.get(suffix)
    if spec is None:
        return None
    try:
        import tree_sitter

        module = importlib.import_module(spec[0])
        return tree_sitter.Parser(tree_sitter.Language(getattr(module, spec[1])()))
    except (ImportError, AttributeError, ValueError):
        return None


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[name.rfind("."):].lower() if "." in name else ""


MAX_DEPTH = 400  # syntax nesting looked at: a hostile file can nest 50,000 deep
MAX_SCAN = 2000  # lines looked at above and below a hunk by the indentation fallback


def enclosing(lines: list[str], path: str, first: int, last: int) -> Span | None:
    """The innermost definition around new-file lines first..last, or None."""
    tree = syntax_tree(lines, path)
    if tree is not None:
        return _by_tree(tree, lines, first, last)
    return _by_indentation(lines, first, last)


def syntax_tree(lines: list[str], path: str) -> Any:
    """The file's tree-sitter tree (parsed once per review), or None when no grammar covers it."""
    parser = _parser(_suffix(path))
    return _parsed(parser, lines) if parser is not None else None


# the syntax trees of the head files in use: a review asks about every hunk of a file, and
# reparsing a 1 MB file per hunk (6,000 hunks) took minutes. Keyed by the lines list's
# identity (the engine reads each head file once per review); the list is kept alive with its
# tree so that the id cannot be reused while cached.
_TREES: dict[int, tuple[list[str], Any]] = {}
_TREES_KEPT = 8


def _parsed(parser: Any, lines: list[str]) -> Any:
    hit = _TREES.get(id(lines))
    if hit is not None and hit[0] is lines:
        return hit[1]
    tree = parser.parse("\n".join(lines).encode("utf-8", "replace"))
    if len(_TREES) >= _TREES_KEPT:
        del _TREES[next(iter(_TREES))]
    _TREES[id(lines)] = (lines, tree)
    return tree


def _by_tree(tree: Any, lines: list[str], first: int, last: int) -> Span | None:
    start = (first - 1, len(lines[first - 1]) - len(lines[first - 1].lstrip()))
    end = (last - 1, max(len(lines[last - 1].rstrip()), start[1] if first == last else 0))
    # down from the root with a cursor, keeping the path: linear in the depth (a node's
    # `parent` is found from the root again in tree-sitter, so walking up is quadratic)
    path: list[Any] = []
    cursor = tree.walk()
    while len(path) < MAX_DEPTH:
        node = cursor.node
        if node.start_point > start or node.end_point < end:
            break
        path.append(node)
        if cursor.goto_first_child_for_point(start) is None:
            break
    for node in reversed(path):
        if node.type in _DEFINITIONS and (node.start_point[0] < first - 1
                                          or node.end_point[0] > last - 1):
            return Span(node.start_point[0] + 1, node.end_point[0] + 1)
    return None


_OPENS = re.compile(r"[:{(]\s*(#.*|//.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _by_indentation(lines: list[str], first: int, last: int) -> Span | None:
    """The nearest line above with less indentation that opens a block, down to the first line
    after the hunk that is indented no deeper than it (or its closing brace)."""
    inner = min((_indent(lines[i]) for i in range(first - 1, last) if lines[i].strip()),
                default=0)
    head = next((i for i in range(first - 2, max(-1, first - 2 - MAX_SCAN), -1)
                 if lines[i].strip() and _indent(lines[i]) < inner and _OPENS.search(lines[i])),
                None)
    if head is None:
        return None
    depth = _indent(lines[head])
    for i in range(last, min(len(lines), last + MAX_SCAN)):
        if lines[i].strip() and _indent(lines[i]) <= depth:
            closing = lines[i].strip()[0] in "}])"
            return Span(head + 1, i + 1 if closing else i)
    return Span(head + 1, len(lines)) if len(lines) <= last + MAX_SCAN else None


def around(lines: list[str], path: str, first: int, last: int, pad: int,
           max_lines: int) -> Span:
    """What to show around new-file lines first..last: the enclosing definition when it has at
    most `max_lines` lines, else `pad` lines on each side."""
    span = enclosing(lines, path, first, last)
    if span is None or span.last - span.first + 1 > max_lines:
        span = Span(first - pad, last + pad)
    return Span(max(1, min(span.first, first - pad)), min(len(lines), max(span.last, last + pad)))


MAX_LINE_CHARS = 500  # a context line longer than this is shown cut short


def surrounding_blocks(chunk: Chunk, head: Callable[[str], list[str] | None], pad: int,
                       max_lines: int) -> list[str]:
    """For each file of `chunk`, the lines around its hunks that the chunk does not show, as
    blocks `=== path lines A-B (head, not in the diff)` + `|code` lines. A file whose head text
    does not agree with the diff's new side (a stale source) gets none."""
    blocks = []
    for file, pieces in chunk.by_file():
        shown = {ln.new: ln.text for p in pieces for ln in p.lines if ln.new is not None}
        lines = head(file.path) if shown else None  # a deleted file has no head
        if lines is None or any(
                n > len(lines) or lines[n - 1].rstrip("\r") != text.rstrip("\r")
                for n, text in shown.items()):
            continue
        wanted: set[int] = set()
        for p in pieces:
            news = [ln.new for ln in p.lines if ln.new is not None]
            if news:
                span = around(lines, file.path, min(news), max(news), pad, max_lines)
                wanted.update(range(span.first, span.last + 1))
        for first, last in _runs(sorted(wanted - shown.keys())):
            body = "\n".join("|" + defuse(line[:MAX_LINE_CHARS]) for line in lines[first - 1:last])
            blocks.append(f"=== {label(file.path)} lines {first}-{last} (head, not in the diff)\n"
                          + body)
    return blocks


def definition_blocks(chunk: Chunk, found: list[Any]) -> list[str]:
    """Blocks for the definitions (reviewbot.engine.definitions.Definition) that this chunk's added
    lines use and does not show itself."""
    added = "\n".join(ln.text for p in chunk.pieces for ln in p.lines if ln.kind == "+")
    shown = {(file.path, ln.new) for file, pieces in chunk.by_file() for p in pieces
             for ln in p.lines if ln.new is not None}
    out = []
    for d in found:
        if (d.path, d.first) in shown or not re.search(rf"\b{re.escape(d.name)}\s*\(", added):
            continue
        body = "\n".join("|" + defuse(line[:MAX_LINE_CHARS]) for line in d.lines)
        out.append(f"=== {label(d.path)} lines {d.first}-{d.last} (definition of "
                   f"{label(d.name)}, head, not in the diff)\n{body}")
    return out


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out
