"""A pull request's review threads through GraphQL: REST has neither their resolved state nor a
way to resolve them. A thread is named after its first comment (`databaseId`, the REST id)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from github import GithubException
from github.PullRequest import PullRequest
from requests import RequestException

from reviewbot.context import MAX_ISSUES, LinkedIssue
from reviewbot.errors import ForgeError
from reviewbot.forges.github.api import forge_error

log = logging.getLogger(__name__)

_THREADS = """query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
    reviewThreads(first: 100, after: $cursor) {
      nodes { id isResolved resolvedBy { login } comments(first: 1) { nodes { databaseId } } }
      pageInfo { hasNextPage endCursor } } } } }"""
_CLOSING = """query($owner: String!, $name: String!, $number: Int!, $first: Int!) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
    closingIssuesReferences(first: $first) {
      nodes { number title body repository { nameWithOwner } } } } } }"""
_RESOLVE = """mutation($id: ID!) {
  resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }"""
MAX_THREAD_PAGES = 50
ERRORS = (GithubException, RequestException)


@dataclass(frozen=True)
class ReviewThread:
    node: str  # the GraphQL id resolveReviewThread takes
    root: int  # the REST id of its first comment
    resolved: bool
    resolved_by: str  # the login of who resolved it ("" when open or unknown)


def review_threads(pull: PullRequest, full_name: str) -> dict[int, ReviewThread]:
    """Every review thread of the pull request, by its first comment's id (all pages)."""
    owner, name = full_name.split("/", 1)
    variables: dict[str, Any] = {"owner": owner, "name": name, "number": pull.number,
                                 "cursor": None}
    out: dict[int, ReviewThread] = {}
    for _ in range(MAX_THREAD_PAGES):
        try:
            _, data = pull.requester.graphql_query(_THREADS, variables)
        except ERRORS as exc:
            raise forge_error("listing review threads", exc) from None
        threads = _at(data, "data", "repository", "pullRequest", "reviewThreads")
        nodes = threads.get("nodes")
        for node in nodes if isinstance(nodes, list) else []:
            thread = _thread(node)
            if thread is not None:
                out[thread.root] = thread
        page = _at(threads, "pageInfo")
        if page.get("hasNextPage") is not True:
            break
        variables["cursor"] = page.get("endCursor")
    return out


def resolved_by(pull: PullRequest, full_name: str) -> dict[int, str]:
    """Who resolved each resolved thread ("" when GitHub does not say), by its first comment;
    none when GraphQL fails: the gate then keeps counting findings a person resolved."""
    try:
        threads = review_threads(pull, full_name)
    except ForgeError as exc:
        log.warning("GitHub: reading the review threads failed: %s", exc)
        return {}
    return {t.root: t.resolved_by for t in threads.values() if t.resolved}


def closing_issues(pull: PullRequest, full_name: str) -> list[LinkedIssue]:
    """The issues the pull request closes when merged (`Fixes #12` in its body, or linked by
    hand), of its own repository only."""
    owner, name = full_name.split("/", 1)
    variables = {"owner": owner, "name": name, "number": pull.number, "first": 4 * MAX_ISSUES}
    try:
        _, data = pull.requester.graphql_query(_CLOSING, variables)
    except ERRORS as exc:
        raise forge_error("listing the issues it closes", exc) from None
    nodes = _at(data, "data", "repository", "pullRequest", "closingIssuesReferences").get("nodes")
    out: dict[int, LinkedIssue] = {}
    for node in nodes if isinstance(nodes, list) else []:
        number = node.get("number") if isinstance(node, dict) else None
        same = str(_at(node, "repository").get("nameWithOwner", "")).lower() == full_name.lower()
        if isinstance(number, int) and same and number not in out:
            out[number] = LinkedIssue(f"#{number}", str(node.get("title") or ""),
                                      str(node.get("body") or ""))
    return list(out.values())[:MAX_ISSUES]


def _at(data: Any, *keys: str) -> dict[str, Any]:
    """`data[k1][k2]…` when each step is an object, else {}: the answer is the server's."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _thread(node: Any) -> ReviewThread | None:
    if not isinstance(node, dict) or not isinstance(node.get("id"), str):
        return None
    firsts = _at(node, "comments").get("nodes")
    first = firsts[0] if isinstance(firsts, list) and firsts else None
    root = first.get("databaseId") if isinstance(first, dict) else None
    if not isinstance(root, int) or isinstance(root, bool):
        return None
    login = _at(node, "resolvedBy").get("login")
    return ReviewThread(node["id"], root, node.get("isResolved") is True,
                        login if isinstance(login, str) else "")


def resolve_thread(pull: PullRequest, node: str) -> None:
    try:
        pull.requester.graphql_query(_RESOLVE, {"id": node})
    except ERRORS as exc:
        raise forge_error("resolving a review thread", exc) from None
