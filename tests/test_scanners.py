"""SARIF as untrusted input: what is read from it, and how a hostile file is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reviewbot.diff import parse
from reviewbot.errors import EXIT_USAGE, UsageError
from reviewbot.scanners import (
    MAX_BYTES,
    MAX_RESULTS,
    ScannerResult,
    on_changed_lines,
    read_files,
    read_sarif,
)


def result(uri: str = "app.py", line: int = 5, **extra: Any) -> dict[str, Any]:
    return {"ruleId": "B602", "level": "error", "message": {"text": "shell=True"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri},
                                                "region": {"startLine": line}}}], **extra}


def sarif(tmp_path: Path, *results: Any, tool: str = "Bandit", **top: Any) -> Path:
    path = tmp_path / "scan.sarif"
    doc = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": tool}},
                                         "results": list(results)}], **top}
    path.write_text(json.dumps(doc))
    return path


def refused(path: Path) -> str:
    with pytest.raises(UsageError) as info:
        read_sarif(path)
    assert info.value.exit_code == EXIT_USAGE
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    return message


def test_results_with_a_file_and_a_line_are_read(tmp_path: Path) -> None:
    path = sarif(tmp_path, result(), result("./src/a.py", 2, level="note"),
                 {"ruleId": "X", "message": {"text": "project-wide"}})  # no location: left out
    assert read_sarif(path) == [ScannerResult("Bandit", "B602", "app.py", 5, "error",
                                              "shell=True"),
                                ScannerResult("Bandit", "B602", "src/a.py", 2, "note",
                                              "shell=True")]


def test_uris_outside_the_repository_are_left_out(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    path = sarif(tmp_path, result(f"file://{root}/ok.py"), result("../etc/passwd"),
                 result("/etc/passwd"), result("https://evil.example/app.py"),
                 result("file://evil.example/app.py"), result("a/../../b.py"))
    assert [r.path for r in read_sarif(path, root)] == ["ok.py"]


def test_text_is_one_capped_line_and_names_have_no_backticks(tmp_path: Path) -> None:
    path = sarif(tmp_path, result(message={"text": "x\n" * 2000}, ruleId="a`b" * 100),
                 tool="T\u202eool")
    (found,) = read_sarif(path)
    assert "\n" not in found.message and len(found.message) <= 500
    assert "`" not in found.rule and len(found.rule) <= 100 and "\u202e" not in found.tool


@pytest.mark.parametrize(("content", "says"), [
    (b"\xff\xfe not json", "not JSON"),
    (b"[" * 200_000 + b"]" * 200_000, "not JSON"),
    (json.dumps({"version": "2.0.0", "runs": []}).encode(), "not SARIF 2.1.0"),
    (json.dumps({"version": "2.1.0"}).encode(), "runs is missing"),
    (json.dumps({"version": "2.1.0", "runs": [{"tool": {}}]}).encode(), "driver is missing"),
    (json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}},
                                                "results": {}}]}).encode(), "not a list"),
    (json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}},
                                                "results": [result(level="fatal")]}]}).encode(),
     "level"),
    (json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}},
                                                "results": [result(line="5")]}]}).encode(),
     "startLine"),
])
def test_a_file_that_is_not_sarif_is_one_clear_line(tmp_path: Path, content: bytes,
                                                    says: str) -> None:
    path = tmp_path / "bad.sarif"
    path.write_bytes(content)
    assert says in refused(path)


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.sarif"
    with path.open("wb") as out:
        out.truncate(MAX_BYTES + 1)  # sparse: nothing to read, only its size
    assert "over the" in refused(path)
    assert "cannot read" in refused(tmp_path / "missing.sarif")


def test_only_a_regular_file_is_read_and_never_past_the_cap(tmp_path: Path) -> None:
    zero = tmp_path / "zero.sarif"
    zero.symlink_to("/dev/zero")  # st_size 0, and it never ends
    assert "not a regular file" in refused(zero)
    fifo = tmp_path / "fifo.sarif"
    os.mkfifo(fifo)  # opening it would block for ever
    assert "not a regular file" in refused(fifo)
    grown = tmp_path / "grown.sarif"
    grown.write_bytes(b" " * (MAX_BYTES + 10))
    assert "over the" in refused(grown)


def test_too_many_results_in_all_is_an_error_not_a_cut(tmp_path: Path) -> None:
    half = MAX_RESULTS // 2 + 1
    first = sarif(tmp_path, *[result(line=i + 1) for i in range(half)])
    second = first.with_name("second.sarif")
    second.write_bytes(first.read_bytes())
    assert len(read_files((str(first),))) == half
    with pytest.raises(UsageError, match="more than"):
        read_files((str(first), str(second)))


def test_only_results_on_added_lines_go_to_triage(tmp_path: Path) -> None:
    changes = parse(b"--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n tail\n")
    results = [ScannerResult("T", "R", "app.py", n, "error", "m") for n in (1, 2, 3)]
    results.append(ScannerResult("T", "R", "other.py", 2, "error", "m"))
    assert on_changed_lines(results + results[1:2], changes) == [results[1]]
