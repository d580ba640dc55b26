"""A realistic review result, built from a real diff so that every anchor is a real position."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reviewbot import diff
from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity, merge, with_fingerprints
from reviewbot.result import ReviewResult, Stats, Usage
from reviewbot.withheld import SkippedFile

DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -10,6 +10,8 @@ def search(db, name):
     cur = db.cursor()
-    if name is None:
-        return []
+    query = "SELECT * FROM users WHERE name = '%s'" % name
+    cur.execute(query)
+    rows = cur.fetchall()
+    return rows
     # done
     log("search")
     return None
diff --git "a/docs/r\\303\\251sum\\303\\251 | notes.md" "b/docs/r\\303\\251sum\\303\\251 | notes.md"
index 3333333..4444444 100644
--- "a/docs/r\\303\\251sum\\303\\251 | notes.md"
+++ "b/docs/r\\303\\251sum\\303\\251 | notes.md"
@@ -1,2 +1,2 @@
 # Notes
-Teh old text
+Teh `new` text
"""

DOC = "docs/résumé | notes.md"


def _findings() -> tuple[list[Finding], list[Finding]]:
    changes = diff.parse(DIFF)
    anchored = [
        Finding("src/app.py", 11, Side.NEW, Severity.CRITICAL,
                "SQL built from user input",
                "The query is formatted with `name`, so `' OR 1=1 --` reads every row.\n\n"
                "Use a parameterized query.",
                category="security", end_line=12,
                suggestion='    cur.execute("SELECT * FROM users WHERE name = ?", (name,))\n'),
        Finding("src/app.py", 11, Side.OLD, Severity.MAJOR,
                "Removed the None check | callers pass None",
                "`search(db, None)` used to return `[]`; now it formats `None` into SQL.",
                category="bug", end_line=12),
        Finding(DOC, 2, Side.NEW, Severity.INFO, "Typo: `Teh`", "Teh → The.",
                category="style", suggestion="The `new` text"),
        Finding("src/app.py", 13, Side.NEW, Severity.MINOR, "Unused variable <rows>",
                "</details><script>alert(1)</script>\n```python\nreturn rows", category="style"),
        Finding("src/app.py", 12, Side.NEW, Severity.BLOCKER, "Credentials in the module",
                "A token appears in settings that this change imports.", category="security"),
    ]
    return merge(with_fingerprints(anchored, changes))


def _stats(complete: bool) -> Stats:
    return Stats(
        files_total=4, files_reviewed=2,
        files_skipped=[SkippedFile("poetry.lock", "lock file"),
                       SkippedFile("static/logo.png", "binary file", source=False)],
        changed_lines=8, changed_lines_sent=8 if complete else 6,
        chunks=2, requests=3, usage=Usage(prompt_tokens=12345, completion_tokens=678),
        tool_calls_invalid=1, findings_reanchored=1, wall_seconds=4.2,
        errors=[] if complete else ["chunk 2/2 failed after 4 retries: HTTP 500 from http://gpu:8000/v1"],
    )


@pytest.fixture
def result() -> ReviewResult:
    return ReviewResult(_findings(), "Adds a search endpoint with an SQL injection.",
                        _stats(complete=True), model="qwen2.5-coder", base_url="http://gpu:8000/v1")


@pytest.fixture
def incomplete(result: ReviewResult) -> ReviewResult:
    return replace(result, stats=_stats(complete=False))


@pytest.fixture
def empty() -> ReviewResult:
    return ReviewResult([], "", Stats(files_total=1, files_reviewed=1, changed_lines=3,
                                          changed_lines_sent=3, chunks=1, requests=1))
