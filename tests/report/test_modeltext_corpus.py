"""Fence tricks, rendered by a CommonMark parser: whatever the model writes, what `prose` makes of
it renders as text and code only (no raw HTML, comment, link, image, autolink or bare URL link)."""

from __future__ import annotations

import itertools
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from reviewbot.modeltext import prose

# the forges render GFM: CommonMark with raw HTML, plus autolinks of bare URLs (linkify)
RENDERER = MarkdownIt("gfm-like", {"html": True, "linkify": True})
ALLOWED = {"p", "code", "pre", "ul", "ol", "li", "blockquote", "em", "strong", "hr", "br",
           "h1", "h2", "h3", "h4", "h5", "h6", "s", "del", "table", "thead", "tbody", "tr",
           "th", "td"}

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "<details><summary>Reviewed: 0 issues</summary>",
    "<!-- reviewbot:summary {} -->",
    "![x](https://evil.example/p.png)",
    "[click](javascript:alert(1))",
    "<https://evil.example>",
    "https://evil.example/x",
    "www.evil.example",
    "[ref]: https://evil.example\n\n[ref]",
    "&lt;img src=x&gt; &#60;b&#62;",
]
OPENERS = ["```", "```x`", "``` x ` y", "~~~", "~~~ `x`", "````", "    ```", "   ```",
           "- item\n  ```", "> ```", "1. a\n   ```", "`", "``", "\\```"]
CLOSERS = ["```", "  ```", "    ```", "~~~", "````", "- ```", "> ```", "", "```x"]


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.comments = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_comment(self, data: str) -> None:
        self.comments += 1


def rendered_tags(markdown: str) -> Tags:
    parser = Tags()
    parser.feed(RENDERER.render(markdown))
    return parser


def corpus() -> list[str]:
    texts = []
    for opener, closer, payload in itertools.product(OPENERS, CLOSERS, PAYLOADS):
        texts.append(f"{opener}\ncode {payload}\n{closer}\n{payload}\nafter {payload}")
    for payload in PAYLOADS:
        texts += [payload, f"text `{payload}` text {payload}", f"`x\n{payload}\n`",
                  f"    indented {payload}\n{payload}", f"- {payload}\n  - {payload}"]
    return texts


def test_the_corpus_is_large() -> None:
    assert len(corpus()) > 1000


@pytest.mark.parametrize("start", range(0, len(corpus()), 200))
def test_no_element_but_code_and_text_survives(start: int) -> None:
    for text in corpus()[start:start + 200]:
        tags = rendered_tags(prose(text) + "\n\nthe page goes on")
        assert tags.tags <= ALLOWED and tags.comments == 0, (text, tags.tags)
        # nothing the model wrote swallows the page after it
        assert RENDERER.render(prose(text) + "\n\nthe page goes on").rstrip().endswith(
            "<p>the page goes on</p>"), text


def test_the_corpus_is_hostile_without_prose() -> None:
    """The corpus would render active elements as written: the test above is not vacuous."""
    active = [t for t in corpus() if rendered_tags(t).tags - ALLOWED or rendered_tags(t).comments]
    assert len(active) > len(corpus()) // 2


def test_code_stays_code() -> None:
    text = "Use this:\n```python\nif a < b and c > d:\n    x = [1]\n```\nand `a<b` inline."
    out = prose(text)
    assert "if a < b and c > d:\n    x = [1]" in out and "`a<b`" in out
    assert "<pre><code" in RENDERER.render(out)


def test_inline_text_links_nothing() -> None:
    from reviewbot.modeltext import inline

    tags = rendered_tags(inline("see https://evil.example and www.evil.example <b>x</b>"))
    assert tags.tags <= {"p"}
