"""Model-written text: cleaned once when an answer is parsed, escaped for every sink it reaches.

A diff can steer the model, so its text is data written by someone else. Two steps:
- `clean` (at parse time): no control, bidi-override or zero-width characters, a length cap;
- the sink functions (`prose`, `inline`, `code`, `fenced`): markdown that renders as text and
  cannot act. Outside code it cannot open raw HTML, an HTML comment (so never a reviewbot
  marker), a link or an image; a line cannot start a GitLab quick action (`/merge`, anywhere,
  code blocks included, since GitLab's extractor knows only some fence forms); `@name`,
  `#123` and `!123` do not notify anyone or cross-reference other issues.

The forges' comments, the summary note and the markdown report all go through here.
"""

from __future__ import annotations

import re
from typing import Any

from reviewbot.redact import redact

# C0 (but tab and newline), DEL, C1, bidi embeddings/overrides/isolates, marks, zero-width
# characters and the BOM: invisible text that can hide what a comment really says
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)
ZWSP = "\u200b"  # added by the sinks only (clean removes the model's own)


def clean(value: object, max_chars: int) -> str:
    """A model string made safe to keep: visible characters only, no registered secret (a
    steered model may echo one into a comment), at most `max_chars`."""
    if not isinstance(value, str):
        return ""
    text = redact(value).replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n")
    text = _INVISIBLE.sub("", text.replace("\u2029", "\n"))
    return text[:max_chars]


def one_line(text: str) -> str:
    return " ".join(text.split())


# --- neutralising what markdown would turn into actions -----------------------------------------

_QUICK_ACTION = re.compile(r"^(\s*)/(?=[A-Za-z])", re.MULTILINE)
# not the `#` of the sinks' own `&#91;`: a zero-width space there would show the entity as text
_MENTION = re.compile(r"(?<!&)([@#!])(?=[\w])")
_ENTITY_OR_AMP = re.compile(r"&")
_HTML_START = re.compile(r"<")
# what GFM's autolink extension links without any markup: scheme://, www.
_BARE_URL = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*:|\bwww)(//|\.)")


def _no_autolinks(text: str) -> str:
    """Bare `scheme://` and `www.` broken with a zero-width space: GFM links them unmarked."""
    return _BARE_URL.sub(lambda m: m.group(1) + ZWSP + m.group(2), text)


def no_actions(text: str) -> str:
    """What is left active in code too: quick actions at a line start, mentions, references."""
    text = _QUICK_ACTION.sub(r"\1\\/", text)
    return _MENTION.sub(lambda m: m.group(1) + ZWSP, text)


def _plain(text: str) -> str:
    """Text outside code: entities, tags, comments, links and images become literal."""
    text = _ENTITY_OR_AMP.sub("&amp;", text)
    text = _HTML_START.sub("&lt;", text)
    text = _no_autolinks(text)
    return no_actions(text.replace("[", "&#91;"))


# --- sinks -----------------------------------------------------------------------------------

_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#&!])")
_BACKTICKS = re.compile(r"`+")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def inline(text: str) -> str:
    """Plain text shown literally on one line, safe in a table cell: markdown syntax escaped.

    CommonMark lets any ASCII punctuation be backslash-escaped, and GFM tables accept `\\|`.
    """
    text = _INLINE_SPECIAL.sub(r"\\\1", one_line(text))
    return no_actions(_no_autolinks(text))


def code(text: str, *, in_table: bool = False) -> str:
    """An inline code span that survives backticks in the text (a longer delimiter run)."""
    text = one_line(text)
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    # GFM splits table cells on `|` even inside code spans, and renders `\|` there as `|`
    return span.replace("|", "\\|") if in_table else span


def fence(text: str) -> str:
    """A backtick fence longer than any backtick run inside `text` (at least three)."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def fenced(text: str, info: str = "") -> str:
    """A fenced code block that nothing inside the text can close."""
    bar = fence(text)
    return f"{bar}{info}\n{no_actions(text.rstrip(chr(10)))}\n{bar}"


def prose(text: str) -> str:
    """Model-written markdown, kept as markdown but unable to act or break the page around it.

    Which lines are code is decided by a CommonMark parser (markdown-it, as GitLab and GitHub
    follow CommonMark), never by a hand-written fence tracker: lines of fenced and indented code
    blocks are kept as written but for the always-active parts (`no_actions`), inline code
    spans likewise, and everything else goes through `_plain`. The result is parsed once more:
    if it still holds raw HTML, a link, an image, or a code block left open (that would swallow
    the page after it), the whole text is shown as one fenced block instead.
    """
    lines = text.split("\n")
    code = _code_block_lines(text)
    out = "\n".join(no_actions(line) if i in code else _outside_code(line)
                     for i, line in enumerate(lines))
    if _inert(out):
        return out
    closed = f"{out}\n{_open_fence(out)}"  # a fence the model left open at the end
    return closed if _inert(closed) else fenced(text)


def _markdown() -> Any:
    global _PARSER
    if _PARSER is None:
        from markdown_it import MarkdownIt

        _PARSER = MarkdownIt("commonmark", {"html": True})
    return _PARSER


_PARSER: Any = None
_ACTIVE = frozenset({"html_block", "html_inline", "link_open", "image"})
_SENTINEL = "reviewbot-end-of-text"


def _code_block_lines(text: str) -> set[int]:
    """The 0-based lines of `text` inside fenced or indented code blocks, at any nesting."""
    return {i for token in _markdown().parse(text) if token.type in ("fence", "code_block")
            and token.map for i in range(*token.map)}


def _open_fence(markdown: str) -> str:
    """The markup that closes the top-level fence running to the end of `markdown`, or ""."""
    fences = [t for t in _markdown().parse(markdown) if t.type == "fence" and t.level == 0]
    return fences[-1].markup if fences else ""


def _inert(markdown: str) -> bool:
    """Nothing in `markdown` renders as HTML, a link or an image, and a paragraph after it is
    a paragraph (no block was left open)."""
    tokens = _markdown().parse(markdown + "\n\n" + _SENTINEL)
    for token in tokens:
        if token.type in _ACTIVE or any(c.type in _ACTIVE for c in token.children or ()):
            return False
    last = next((t for t in reversed(tokens) if t.type == "inline"), None)
    return last is not None and last.content == _SENTINEL and last.level == 1


def _outside_code(line: str) -> str:
    """`_plain` on the text of a line, leaving inline code spans (matched backtick runs) alone."""
    pieces: list[str] = []
    pos = 0
    while pos < len(line):
        start = line.find("`", pos)
        if start < 0:
            break
        run = len(line[start:]) - len(line[start:].lstrip("`"))
        close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(line, start + run)
        escaped = start > 0 and line[start - 1] == "\\"  # `\`` is a literal backtick
        if close is None or escaped:  # an unmatched run is literal text
            pieces.append(_plain(line[pos:start + run]))
            pos = start + run
            continue
        pieces.append(_plain(line[pos:start]))
        pieces.append(no_actions(line[start:close.end()]))
        pos = close.end()
    pieces.append(_plain(line[pos:]))
    return "".join(pieces)


def suggestion_ok(text: str) -> bool:
    """A suggestion is code the author may apply verbatim: it is dropped, not altered, when a
    line of it would be a quick action."""
    return _QUICK_ACTION.search(text) is None
