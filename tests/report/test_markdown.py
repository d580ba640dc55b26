from __future__ import annotations

import re
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from reviewbot.modeltext import code, fenced, inline, prose
from reviewbot.report import render
from reviewbot.result import ReviewResult
from reviewbot.withheld import SkippedFile

_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def cells(row: str) -> int:
    return len(_UNESCAPED_PIPE.findall(row)) - 1


def test_sections(result: ReviewResult) -> None:
    out = render(result, "markdown")
    assert out.startswith("## reviewbot review\n")
    assert "✅ **Complete**: 8/8 changed lines reached the model; 1 lock file not reviewed." in out
    assert "### Summary\n\nAdds a search endpoint" in out
    assert "### Findings (5)" in out
    assert "### Skipped files (2)" in out and "| `poetry.lock` | lock file |" in out
    assert out.count("<details>") == out.count("</details>") == 5
    assert "INCOMPLETE" not in out


def test_table_rows_keep_their_columns(result: ReviewResult) -> None:
    out = render(result, "markdown")
    expected = 0
    for line in out.split("\n"):
        if line.startswith("| Severity"):
            expected = 5
        elif line.startswith("| File"):
            expected = 2
        if line.startswith("| "):
            assert cells(line) == expected, line
    assert "Removed the None check \\| callers pass None" in out
    assert "`docs/résumé \\| notes.md`" in out


def test_lines_and_sides(result: ReviewResult) -> None:
    out = render(result, "markdown")
    assert "| 11–12 |" in out and "| 11–12 (old) |" in out and "| 12 |" in out


def test_hostile_body_cannot_break_the_page(result: ReviewResult) -> None:
    out = render(result, "markdown")
    assert "<script>" not in out
    assert "&lt;/details>&lt;script>" in out
    # the body's unclosed ```python fence is closed before our </details>
    body = out[out.index("Unused variable &lt;rows&gt;</summary>"):]
    block = body[body.index("```python"):body.index("</details>")]
    assert block.rstrip().endswith("```")


def test_suggestion_with_backticks_gets_a_longer_fence(result: ReviewResult) -> None:
    f = replace(result.findings[0], suggestion="x = ```weird```\n")
    out = render(replace(result, findings=[f]), "markdown")
    assert "````\nx = ```weird```\n````" in out


def test_incomplete_banner(incomplete: ReviewResult) -> None:
    out = render(incomplete, "markdown")
    assert "**REVIEW INCOMPLETE**: only 6/8 changed lines reached the model" in out
    assert "HTTP 500" in out
    assert out.index("REVIEW INCOMPLETE") < out.index("### Findings")


def test_skipped_reason_with_pipe(empty: ReviewResult) -> None:
    empty.stats.files_skipped.append(SkippedFile("a|b.min.js", "generated | minified"))
    row = next(r for r in render(empty, "markdown").split("\n") if "b.min.js" in r)
    assert cells(row) == 2


def test_escape_helpers() -> None:
    assert inline("a | b\nc `d` *e*") == "a \\| b c \\`d\\` \\*e\\*"
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("a|b", in_table=True) == "`a\\|b`"
    assert fenced("```\ncode\n```") == "````\n```\ncode\n```\n````"
    assert prose("use `<T>` not <T>") == "use `<T>` not &lt;T>"
    assert prose("```\nopen") == "```\nopen\n```"
    assert prose("~~~\n<b>\n~~~\n<i>") == "~~~\n<b>\n~~~\n&lt;i>"


@given(st.text())
def test_inline_is_one_cell(text: str) -> None:
    out = inline(text)
    assert "\n" not in out and "\r" not in out
    assert not _UNESCAPED_PIPE.search(out.replace("\\\\", ""))


@given(st.text())
def test_code_span_delimiter_is_longer_than_any_inner_run(text: str) -> None:
    out = code(text)
    fence = re.match(r"`+", out)
    assert fence is not None and out.endswith(fence.group())
    inner = out[len(fence.group()):-len(fence.group())]
    assert all(len(run) != len(fence.group()) for run in re.findall(r"`+", inner))


@given(st.text())
def test_prose_never_leaves_a_fence_open(text: str) -> None:
    out = prose(text)
    assert prose(out + "\n<x>").endswith("&lt;x>")


def test_held_back_and_dropped_findings_are_marked(result: ReviewResult) -> None:
    from reviewbot.withheld import Dropped, DropStage, Held, HeldTo

    first = result.findings[0]
    marked = replace(result, held=[Held(first.fingerprint, HeldTo.SUMMARY, "below inline_min_severity major")],
                     dropped=[Dropped(result.findings[1], DropStage.VERIFY, "not <b>real</b> | @x")])
    out = render(marked, "markdown")
    assert "*(not inline: below inline\\_min\\_severity major)*" in out
    assert "### Dropped candidates (1)" in out and "| verify |" in out
    assert "<b>" not in out and "@\u200bx" in out  # the verifier's reason is model text too
    text = render(marked, "text")
    assert "not inline: below inline_min_severity major" in text
    assert "Dropped candidates (1)" in text and "verify: not <b>real</b>" in text
