"""Reading the model's answers: when a summary beside an empty findings list names a problem
(the named-problem request), with summaries the real Qwen2.5-Coder-1.5B wrote."""

from __future__ import annotations

import pytest

from reviewbot.engine.summaries import names_a_problem

# Qwen2.5-Coder-1.5B's summaries that echo the prompt's checklist to deny it: no problem named.
# The first is verbatim, as cut at 400 characters (the tool call of the real-set case
# ripgrep-361698b90a, benchmarks/results/real-set-cpu-b); the others are its shape
DENIALS = [
    ("The change does not introduce any new bugs, crashes, wrong results, race conditions, "
     "resource leaks, security problems, data loss, broken error handling, or maintainability "
     "problems. The change is a simple refactoring of the `Glob` and `Gitignore` "
     "implementations, which does not affect the functionality of the code. The change does "
     "not introduce any new bugs, crashes, wrong results, raceconditions"),
    "The change does not introduce any new bugs, crashes, wrong results or security problems.",
    ("This part of the change adds a new option and does not introduce any bugs or security "
     "issues."),
]
# summaries that do name one
PROBLEMS = [
    "This introduces a command injection.",
    # verbatim from the same run (click-06b158831f, findings_format json)
    "The `executable` parameter is missing in the `Path` type, which is a security risk.",
    "The function does not check for null, which causes a crash.",
    "The file handle is never closed.",
    "The change adds a retry loop; the loop bound is off by one and may crash.",
    "Division by zero when the list is empty.",
    "It does not handle the error returned by Close.",
]
CLEAN = ["The change looks correct.", "No findings found in this part of the change.", "This adds a retry loop. It has no obvious issues.",
         "The change refactors the handler."]


@pytest.mark.parametrize("summary", DENIALS)
def test_a_denial_of_the_checklist_names_no_problem(summary: str) -> None:
    assert not names_a_problem(summary)


@pytest.mark.parametrize("summary", PROBLEMS)
def test_a_summary_that_speaks_of_a_problem_names_one(summary: str) -> None:
    assert names_a_problem(summary)


@pytest.mark.parametrize("summary", CLEAN)
def test_a_clean_or_descriptive_summary_names_none(summary: str) -> None:
    assert not names_a_problem(summary)
