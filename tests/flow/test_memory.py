"""What the project's memory tells of a finding: did its file change since it was posted."""

from __future__ import annotations

from reviewbot.diff import ChangeSet, parse
from reviewbot.errors import ForgeError
from reviewbot.flow.memory import MAX_COMPARED_HEADS, ChangedSince
from reviewbot.forges.base import ChangeRequest, PostedComment
from tests.forges.local import LocalForge

DIFF = b"""diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-a = 1
+a = 2
"""


class Comparing(LocalForge):
    """Compares any head but "gone" (the forge refuses) with the current one."""

    def __init__(self) -> None:
        super().__init__(parse(DIFF), head_sha="now")
        self.compared: list[str] = []

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        self.compared.append(since_sha)
        if since_sha == "gone":
            raise ForgeError("404 Not Found")
        return parse(DIFF)


def test_a_findings_file_changed_since_its_head_or_not_or_cannot_be_told() -> None:
    forge = Comparing()
    changed = ChangedSince(forge, forge.fetch())
    assert changed(PostedComment("1", "f1", "app.py", head_sha="old")) is True
    assert changed(PostedComment("2", "f2", "other.py", head_sha="old")) is False
    assert changed(PostedComment("3", "f3", "app.py", head_sha="now")) is False  # same head
    assert changed(PostedComment("4", "f4", "app.py")) is None  # no head known
    assert changed(PostedComment("5", "f5", "app.py", head_sha="gone")) is None
    assert forge.compared == ["old", "gone"]  # one comparison per head


def test_the_comparisons_per_review_are_bounded() -> None:
    forge = Comparing()
    changed = ChangedSince(forge, forge.fetch())
    told = [changed(PostedComment(str(i), "f", "app.py", head_sha=f"h{i}"))
            for i in range(MAX_COMPARED_HEADS + 3)]
    assert told.count(True) == MAX_COMPARED_HEADS and told[-1] is None
    assert len(forge.compared) == MAX_COMPARED_HEADS
