"""GitHub's GraphQL answers about review threads are server replies: untrusted. Whatever their
shape, a thread counts as resolved only when the answer says so in the expected form."""

from __future__ import annotations

from typing import Any

import pytest

from reviewbot.errors import ForgeError
from reviewbot.forges.github.graphql import resolved_by, review_threads


class _Requester:
    def __init__(self, pages: list[Any]) -> None:
        self.pages = pages
        self.asked = 0

    def graphql_query(self, query: str, variables: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        self.asked += 1
        return {}, self.pages[min(self.asked - 1, len(self.pages) - 1)]


class _Pull:
    number = 7

    def __init__(self, pages: list[Any]) -> None:
        self.requester = _Requester(pages)


def _page(nodes: Any, more: bool = False) -> dict[str, Any]:
    return {"data": {"repository": {"pullRequest": {"reviewThreads": {
        "nodes": nodes, "pageInfo": {"hasNextPage": more, "endCursor": "c"}}}}}}


def test_hostile_thread_nodes_are_ignored_and_only_a_true_isresolved_counts() -> None:
    nodes = [
        {"id": "T1", "isResolved": True, "resolvedBy": {"login": "dana"},
         "comments": {"nodes": [{"databaseId": 11}]}},
        {"id": "T2", "isResolved": "yes", "resolvedBy": {"login": "x"},  # not a boolean
         "comments": {"nodes": [{"databaseId": 12}]}},
        {"id": "T3", "isResolved": True, "resolvedBy": ["<script>"],
         "comments": {"nodes": [{"databaseId": "13"}]}},  # no integer id: no thread
        {"id": 4, "isResolved": True, "comments": {"nodes": [{"databaseId": 14}]}},
        {"id": "T5", "isResolved": True, "resolvedBy": "dana", "comments": {"nodes": [{}]}},
        "not an object", None, {"id": "T6", "isResolved": True, "comments": None},
        {"id": "T7", "isResolved": True, "resolvedBy": None,
         "comments": {"nodes": [{"databaseId": 17}]}},
    ]
    pull = _Pull([_page(nodes)])
    assert resolved_by(pull, "acme/widgets") == {11: "dana", 17: ""}  # type: ignore[arg-type]
    assert set(review_threads(pull, "acme/widgets")) == {11, 12, 17}  # type: ignore[arg-type]


@pytest.mark.parametrize("answer", [None, [], {"data": None}, {"errors": [{"message": "x"}]},
                                    {"data": {"repository": "<b>"}}])
def test_an_answer_of_another_shape_is_no_thread_at_all(answer: Any) -> None:
    assert review_threads(_Pull([answer]), "acme/widgets") == {}  # type: ignore[arg-type]


def test_a_server_that_always_says_there_is_more_is_read_a_bounded_number_of_times() -> None:
    pull = _Pull([_page([], more=True)])
    review_threads(pull, "acme/widgets")  # type: ignore[arg-type]
    assert pull.requester.asked == 50


def test_a_failed_query_leaves_every_thread_open_for_the_gate() -> None:
    class Failing(_Pull):
        def __init__(self) -> None:
            super().__init__([])
            self.requester = self  # type: ignore[assignment]

        def graphql_query(self, query: str, variables: dict[str, Any]) -> Any:
            from requests import ConnectionError as Lost
            raise Lost("down")

    with pytest.raises(ForgeError):
        review_threads(Failing(), "acme/widgets")  # type: ignore[arg-type]
    assert resolved_by(Failing(), "acme/widgets") == {}  # type: ignore[arg-type]


def test_closing_references_of_another_shape_or_repository_are_left_out() -> None:
    from reviewbot.context import LinkedIssue
    from reviewbot.forges.github.graphql import closing_issues

    nodes = [{"number": 12, "title": "Own", "body": None,
              "repository": {"nameWithOwner": "ACME/widgets"}},
             {"number": 3, "title": "Other", "body": "x",
              "repository": {"nameWithOwner": "evil/widgets"}},
             {"number": "4", "title": "t", "repository": {"nameWithOwner": "acme/widgets"}},
             {"number": 5, "title": ["<b>"], "repository": "acme/widgets"},
             {"number": 12, "title": "again", "repository": {"nameWithOwner": "acme/widgets"}},
             None, "not an object"]
    answer = {"data": {"repository": {"pullRequest": {"closingIssuesReferences": {
        "nodes": nodes}}}}}
    pull = _Pull([answer])
    assert closing_issues(pull, "acme/widgets") == [  # type: ignore[arg-type]
        LinkedIssue("#12", "Own", "")]
    assert closing_issues(_Pull([{"data": None}]), "acme/widgets") == []  # type: ignore[arg-type]
