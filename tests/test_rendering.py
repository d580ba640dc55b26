"""Findings as markdown, in memory: the model's words are shown as text wherever they land (a
heading, a table cell, a list, an HTML block), a suggestion is verbatim code, and long lists
say what they left out."""

from __future__ import annotations

import re

import pytest

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.rendering import (
    comment,
    details,
    dismissed_lines,
    issue_lines,
    lines,
    list_item,
    suggestion_block,
    table,
)
from reviewbot.result import IssueCheck, IssueVerdict, ScannerDismissal

HOSTILE = "Fix | [me](https://evil.example) **now** @all <img src=x>"


def _finding(title: str = "Off by one", body: str = "The loop ends early.", line: int | None = 3,
             end_line: int | None = None, side: Side = Side.NEW) -> Finding:
    return Finding(path="src/a.py", line=line, side=side, severity=Severity.MAJOR, title=title,
                   body=body, end_line=end_line, fingerprint="f1")


@pytest.mark.parametrize(("finding", "shown"), [
    (_finding(), "3"), (_finding(end_line=5), "3–5"), (_finding(end_line=3), "3"),
    (_finding(side=Side.OLD), "3 (old)"), (_finding(line=None), "file")])
def test_lines(finding: Finding, shown: str) -> None:
    assert lines(finding) == shown


def test_a_comment_shows_the_models_title_as_text_and_puts_the_marker_last() -> None:
    text = comment(_finding(title=HOSTILE), "```suggestion\nx\n```", "<!-- marker -->")
    head = text.split("\n\n")[0]
    assert head.startswith("**major** (bug): ")
    # every markdown or HTML character is escaped: a link, bold, a tag show as typed
    assert re.findall(r"(?<!\\)[\[\]<>*|]", head.removeprefix("**major** (bug): ")) == []
    assert "@all" not in head  # no mention that notifies a whole project
    assert text.endswith("<!-- marker -->") and "```suggestion\nx\n```" in text


def test_a_pipe_in_the_models_words_cannot_add_a_table_column() -> None:
    rows = table([_finding(title=HOSTILE)], held={"f1": "a | b"}).splitlines()
    unescaped = [len(re.findall(r"(?<!\\)\|", row)) for row in rows]
    assert unescaped == [6, 6, 6] and "*(not inline: a \\| b)*" in rows[2]


def test_details_escape_html_in_the_summary_line_and_fence_the_suggestion() -> None:
    finding = Finding(path="a.py", line=1, side=Side.NEW, severity=Severity.MINOR,
                      title="</summary></details><script>alert(1)</script>", body="b",
                      suggestion="print('```')\n", fingerprint="f")
    text = details(finding)
    assert "<script>" not in text and text.count("</details>") == 1
    assert "````\nprint('```')\n````" in text


def test_a_suggestion_with_backticks_gets_a_longer_fence() -> None:
    assert suggestion_block("a = '```'", "suggestion:-0+0") == \
        "````suggestion:-0+0\na = '```'\n````"


def test_a_list_item_keeps_the_explanation_on_one_capped_line() -> None:
    item = list_item(_finding(body="first\n\n# second\n" + "x" * 5000))
    assert len(item) == 2 and item[0].startswith("- **major** `src/a.py` line 3: Off by one")
    assert "\n" not in item[1] and len(item[1]) < 2200 and "\\# second" in item[1]


def test_linked_issues_link_only_the_forges_own_references() -> None:
    out = issue_lines([
        IssueCheck("#12", "Crash on empty input", IssueVerdict.PARTLY, "the empty list"),
        IssueCheck("[x](https://evil.example)", "t", IssueVerdict.NOT, "all"),
        IssueCheck("#13", "Done", IssueVerdict.ADDRESSED, "ignored when addressed"),
        IssueCheck("#14", "?", IssueVerdict.UNKNOWN)])
    assert out[2] == "- #12 Crash on empty input: **partly addressed**; missing: the empty list"
    assert "](https://" not in out[3]
    assert out[4] == "- #13 Done: **addressed**"
    assert "not judged" in out[5]
    assert issue_lines([]) == []


def test_dismissed_scanner_results_are_listed_up_to_a_limit() -> None:
    many = [ScannerDismissal("semgrep", "rule-1", "a.py", n, "") for n in range(5)]
    out = dismissed_lines(many, limit=3)
    assert out[1] == "**Scanner results dismissed** (5)"
    assert len(out) == 6 and out[-1] == "- … and 2 more" and "no reason given" in out[2]
