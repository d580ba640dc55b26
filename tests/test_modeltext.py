"""Model text rendered for a forge or a report cannot act: no quick action, mention, HTML, link,
marker or invisible character survives, and code stays code."""

from __future__ import annotations

import re

from reviewbot.modeltext import ZWSP, clean, inline, prose, suggestion_ok

HOSTILE = "\n".join([  # noqa: FLY002 - one hostile construct a line
    "/merge",
    "  /approve",
    "/assign @alice",
    "Ping @all and see #12 and !7",
    "<img src=x onerror=alert(1)> <!-- reviewbot:eyJraW5kIjoic3VtbWFyeSJ9 -->",
    "[click](javascript:alert(1)) ![t](http://tracker.example/p.png)",
    "&#106;avascript entities and <script>x</script>",
    "~~~",
    "/label ~security",
    "~~~",
])


def test_prose_neutralises_every_active_construct() -> None:
    out = prose(HOSTILE)
    assert not re.search(r"^\s*/[a-z]", out, re.MULTILINE)  # no line starts a quick action
    assert "@all" not in out and "@alice" not in out and f"@{ZWSP}all" in out
    assert "#12" not in out and "!7" not in out
    assert "<img" not in out and "<script" not in out and "<!--" not in out
    assert "](" not in out.replace("&#91;", "") or "[" not in out  # no live link syntax
    assert "[" not in out and "&#106;" not in out


def test_code_stays_code_but_cannot_act() -> None:
    out = prose("Use `Vec<T>` here:\n```rust\nlet v: Vec<u8> = x & y;\n/merge\n```")
    assert "`Vec<T>`" in out and "let v: Vec<u8> = x & y;" in out
    assert "\n\\/merge\n" in out


def test_an_open_fence_is_closed() -> None:
    assert prose("```\ncode").endswith("\n```")


def test_inline_escapes_markdown_and_mentions() -> None:
    out = inline("**x** <b> @all [a](b)")
    # backslash escapes: the text shows literally, none of it is markup
    assert "\\<b\\>" in out and "\\[a\\](b)" in out and "@all" not in out


def test_clean_strips_invisible_characters_and_caps() -> None:
    text = "a\u202eb\u200bc\u2066d\x07e\ufeff" + "x" * 100
    out = clean(text, 10)
    assert out == "abcde" + "x" * 5
    assert clean(None, 10) == "" and clean("a\r\nb\rc", 10) == "a\nb\nc"


def test_a_suggestion_with_a_quick_action_line_is_refused() -> None:
    assert not suggestion_ok("x = 1\n/merge\n")
    assert suggestion_ok("// comment\n/* block */\nx = a / b\n")


def test_a_bracket_renders_as_a_bracket() -> None:
    """`[` becomes the entity `&#91;`, which the reference guard must leave whole: `&#\u200b91;`
    would show the entity's text instead of the bracket."""
    from markdown_it import MarkdownIt

    out = prose("Index a[0] before #12.")
    assert out == "Index a&#91;0] before #\u200b12."
    assert MarkdownIt("commonmark").render(out) == "<p>Index a[0] before #\u200b12.</p>\n"
