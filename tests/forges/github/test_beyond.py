"""The issues a pull request closes, read through GitHub's GraphQL closing references: only its
own repository's reach the review, and the setting turns the reading off."""

from __future__ import annotations

from typing import Any

from reviewbot.context import Context, LinkedIssue
from reviewbot.diff import ChangeSet
from reviewbot.flow import service
from reviewbot.forges.base import Target
from reviewbot.result import ReviewResult, Stats
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import fake_github, settings  # noqa: F401 - fixture "fake"


class Capture:
    def __init__(self) -> None:
        self.contexts: list[Context] = []

    def __call__(self, changes: ChangeSet, context: Context | None = None) -> ReviewResult:
        self.contexts.append(context or Context())
        return ReviewResult(findings=[], summary="", stats=Stats())


def _review(fake: FakeGitHub, **over: Any) -> Context:
    capture = Capture()
    target = Target("github", fake.full_name, 7)
    service.review(service.ReviewOrder.opened(target, settings(fake, **over), dry_run=True), capture)
    (context,) = capture.contexts
    return context


def test_only_the_repositorys_own_closed_issues_reach_the_review(fake: FakeGitHub) -> None:
    fake.pulls[7].body = "Fixes #12; also closes evil/fork#3 and mentions #13."
    fake.add_issue(12, "Empty input crashes the parser", "Steps: parse('')")
    fake.add_issue(13, "Unrelated", "not closed by this change")
    fake.add_issue(3, "Other repository", "PRIVATE text of another repository", repo="evil/fork")
    assert _review(fake).issues == (
        LinkedIssue("#12", "Empty input crashes the parser", "Steps: parse('')"),)
    asked = [r for r in fake.requests if r.path == "/api/graphql"
             and "closingIssuesReferences" in r.body["query"]]
    assert len(asked) == 1 and asked[0].authorization == f"token {fake.token}"


def test_linked_issues_off_asks_nothing(fake: FakeGitHub) -> None:
    fake.pulls[7].body = "Fixes #12"
    fake.add_issue(12, "Empty input", "x")
    assert _review(fake, linked_issues=False).issues == ()
    assert not any("closingIssuesReferences" in str(r.body) for r in fake.requests)
