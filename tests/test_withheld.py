"""What a review did not pass on (reviewbot.withheld): skipped files named, dropped candidates
with their stage, as every output format reads them."""

from __future__ import annotations

import json

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity
from reviewbot.withheld import Dropped, DropStage, SkippedFile, unreviewed_error


def test_skipped_source_files_are_named_up_to_five() -> None:
    assert unreviewed_error([]) == []
    (one,) = unreviewed_error([SkippedFile(f"src/m{i}.py", "generated") for i in range(7)])
    assert one.startswith("7 changed source file(s) not reviewed and fail_on_skipped is set")
    assert "src/m4.py …" in one and "src/m5.py" not in one


def test_a_dropped_candidate_says_its_stage_as_a_word() -> None:
    f = Finding("a.py", 3, Side.NEW, Severity.MAJOR, "t", "b")
    out = json.loads(json.dumps(Dropped(f, DropStage.VERIFY, "not real").to_dict()))
    assert out["stage"] == "verify" and out["reason"] == "not real" and out["title"] == "t"
