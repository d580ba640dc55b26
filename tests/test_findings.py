"""Findings: severity caps (maintainability, test code) and joining one finding repeated on
adjacent lines."""

from __future__ import annotations

import pytest

from reviewbot.diff import Side
from reviewbot.findings import Finding, Severity, capped_severity, is_test_path, join_adjacent


@pytest.mark.parametrize("path", ["tests/test_api.py", "pkg/server_test.go", "src/a.test.ts",
                                  "src/a.spec.js", "src/test/java/FooTest.java",
                                  "internal/mocks/server.go", "testdata/x.json",
                                  "src/__mocks__/fetch.ts", "conftest.py", "mock_server.py"])
def test_test_mock_and_fixture_files_are_recognised(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize("path", ["src/api.py", "contest.py", "latest.py", "src/protest/main.go",
                                  "src/attestation.py", "src/mockingbird/app.ts"])
def test_code_files_are_not_tests(path: str) -> None:
    assert not is_test_path(path)


def test_in_a_test_file_only_its_own_correctness_or_a_secret_stays_above_minor() -> None:
    mock = "tests/mock_server.py"
    # the field's false positive: a mock server "without authentication" marked critical
    assert capped_severity("security", Severity.CRITICAL, mock,
                           "Mock server does not require basic authentication") \
        is Severity.MINOR
    assert capped_severity("performance", Severity.MAJOR, mock) is Severity.MINOR
    assert capped_severity("bug", Severity.CRITICAL, mock, "The assertion never runs") \
        is Severity.CRITICAL
    assert capped_severity("security", Severity.BLOCKER, mock, "A real API key is committed") \
        is Severity.BLOCKER
    assert capped_severity("concurrency", Severity.MAJOR, mock, "The test is flaky: a race on "
                           "the shared port") is Severity.MAJOR
    # code outside tests keeps its severity; maintainability is capped everywhere
    assert capped_severity("security", Severity.CRITICAL, "src/server.py") is Severity.CRITICAL
    assert capped_severity("maintainability", Severity.MAJOR, "src/a.py") is Severity.MINOR


def test_a_bug_in_test_code_that_speaks_of_the_product_is_at_most_minor() -> None:
    """Real false positives of the 1.5B model on clean changes: test data read as a product bug
    (gin), the product's behaviour anchored in its test (zod)."""
    for path, text in [
        ("binding/binding_test.go", ("Incorrect time format in `FooBarStructForTimeType` The "
         "`time_format` field is set to `unixmilli`. This will cause a panic when parsing.")),
        ("src/v4/classic/tests/default.test.ts", ("Shallow clone of default value The `default` "
         "function returns a shallow clone, which can lead to unexpected behavior.")),
    ]:
        assert capped_severity("bug", Severity.CRITICAL, path, text) is Severity.MINOR
    # the same words outside test code keep their severity
    assert capped_severity("bug", Severity.CRITICAL, "binding/binding.go",
                           "This will cause a panic when parsing.") is Severity.CRITICAL


def _f(line: int, title: str = "Unchecked index", severity: Severity = Severity.MINOR,
       path: str = "src/pip_install.rs", body: str = "The index may be out of range.",
       confidence: float | None = 0.5) -> Finding:
    return Finding(path, line, Side.NEW, severity, title, body, suggestion="x",
                   confidence=confidence)


def test_the_same_finding_on_adjacent_lines_becomes_one_over_the_block() -> None:
    joined = join_adjacent([_f(505), _f(504, severity=Severity.MAJOR), _f(506, confidence=0.9)])
    (one,) = joined
    assert (one.line, one.end_line, one.severity, one.confidence) == (504, 506, Severity.MAJOR,
                                                                      0.9)
    assert one.suggestion is None  # written for one line, it would replace three


def test_findings_apart_or_different_stay_apart() -> None:
    kept = join_adjacent([_f(504), _f(507), _f(505, title="Other"), _f(505, path="b.rs"),
                          _f(505, body="Another reason.")])
    assert sorted((f.path, f.line, f.end_line, f.title) for f in kept) == [
        ("b.rs", 505, None, "Unchecked index"),
        ("src/pip_install.rs", 504, None, "Unchecked index"),
        ("src/pip_install.rs", 505, None, "Other"),
        ("src/pip_install.rs", 505, None, "Unchecked index"),
        ("src/pip_install.rs", 507, None, "Unchecked index")]
