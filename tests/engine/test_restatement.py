"""Restatements: a candidate that copies the change's own changelog entry or comments is
dropped with its reason; one that quotes a little of them, or the code, is kept."""

from __future__ import annotations

from dataclasses import replace

from reviewbot import diff
from reviewbot.diff import Side
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.restatement import drop_restated, is_document, prose
from reviewbot.engine.tokens import EstimateTokenCounter
from reviewbot.findings import Finding, Severity
from reviewbot.withheld import DropStage
from tests.engine.pieces_support import make_pieces

# a real case of the golden set (jsoup 3b97e96, clean): the model posted the changelog entry
# as a major bug on the code it describes
ENTRY = ("When parsing from an InputStream and a multibyte character happened to straddle a "
         "buffer boundary, the stream would not be completely read.")
CHANGE = f"""\
diff --git a/CHANGES.md b/CHANGES.md
--- a/CHANGES.md
+++ b/CHANGES.md
@@ -1,2 +1,3 @@
 ### Bug Fixes
+* {ENTRY}
 * Older entry.
diff --git a/src/Reader.java b/src/Reader.java
--- a/src/Reader.java
+++ b/src/Reader.java
@@ -10,2 +10,4 @@ class Reader {{
     int fill() {{
+        // read until the buffer holds a whole character, not just one chunk of the stream
+        int read = readFully(stream, buffer, offset, remaining);
         return pos;
"""


def _chunk(text: str = CHANGE) -> Chunk:
    return Chunk.numbered(1, make_pieces(diff.parse(text), EstimateTokenCounter(), 10_000))


def _finding(title: str, body: str) -> Finding:
    return Finding("src/Reader.java", 11, Side.NEW, Severity.MAJOR, title, body)


def test_a_copied_changelog_entry_is_dropped_with_its_reason() -> None:
    copied = _finding("Bug Fixes", ENTRY)
    kept, dropped = drop_restated([copied], _chunk())
    assert kept == []
    assert [(d.finding, d.stage) for d in dropped] == [(copied, DropStage.RESTATED)]
    assert "restates" in dropped[0].reason


def test_a_copied_code_comment_is_dropped() -> None:
    copied = _finding("Read until the buffer holds a whole character",
                      "Read until the buffer holds a whole character, not just one chunk.")
    assert drop_restated([copied], _chunk())[0] == []


def test_a_finding_that_quotes_a_little_of_the_prose_is_kept() -> None:
    own = _finding("readFully may block forever",
                   "The comment says the code reads until the buffer holds a whole character, "
                   "but readFully blocks when the stream stays open without sending more bytes, "
                   "so a slow client hangs the parser thread instead of timing out.")
    assert drop_restated([own], _chunk()) == ([own], [])


def test_quoting_the_changed_code_is_not_a_restatement() -> None:
    """Code is not prose: a finding may repeat the changed call in full."""
    quoting = _finding("Unchecked result",
                       "int read = readFully(stream, buffer, offset, remaining) is ignored")
    assert drop_restated([quoting], _chunk()) == ([quoting], [])


def test_a_short_title_alone_is_not_judged() -> None:
    short = _finding("Bug Fixes", "")
    assert drop_restated([short], _chunk()) == ([short], [])


def test_removed_prose_counts_and_mdx_is_a_document() -> None:
    """The zod case: the model copied the RFC sentence of the docs the change edits."""
    sentence = ("The RFC 4122 UUID spec requires the first two bits of byte 8 to be `10`. "
                "Other UUID-like identifiers do not enforce this constraint.")
    text = ("diff --git a/docs/api.mdx b/docs/api.mdx\n--- a/docs/api.mdx\n+++ b/docs/api.mdx\n"
            f"@@ -1,2 +1,2 @@\n intro\n-{sentence}\n+{sentence.replace('4122', '9562/4122')}\n")
    chunk = _chunk(text)
    assert prose(chunk)
    copied = _finding("RFC 4122 UUID variant bits must be 10", sentence)
    assert drop_restated([copied], chunk)[0] == []


def test_a_comment_planted_by_the_author_cannot_drop_a_security_finding() -> None:
    """Hostile: the author names the hole in a comment first, so the model's finding copies
    it; the finding stays (the gate is the team's), while the same words as a bug are dropped."""
    said = "the user id is passed to cursor execute unescaped so any caller can inject SQL"
    text = ("diff --git a/db.py b/db.py\n--- a/db.py\n+++ b/db.py\n"
            f"@@ -1 +1,3 @@\n def find(uid):\n+    # {said}\n"
            "+    return cur.execute(f'SELECT * FROM u WHERE id={uid}')\n")
    hole = Finding("db.py", 3, Side.NEW, Severity.CRITICAL, "SQL injection", said,
                   category="security")
    assert drop_restated([hole], _chunk(text)) == ([hole], [])
    assert drop_restated([replace(hole, category="bug")], _chunk(text))[0] == []


def test_documents_are_known_by_suffix_or_by_a_bare_name() -> None:
    assert is_document("CHANGES") and is_document("docs/NEWS") and is_document("CHANGES.rst")
    assert not is_document("release.go") and not is_document("src/changes.py")


def test_a_change_without_prose_drops_nothing() -> None:
    text = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
            "@@ -1 +1 @@\n-x = compute(1, 2, 3, 4)\n+x = compute(1, 2, 3, 5)\n")
    chunk = _chunk(text)
    assert prose(chunk) == set()
    echo = _finding("x = compute(1, 2, 3, 5)", "x = compute(1, 2, 3, 5) x = compute(1, 2, 3, 5)")
    assert drop_restated([echo], chunk) == ([echo], [])
