"""The bot's pending review on a pull request (approve_before_publish): GitHub keeps one per
user and pull request, seen only by its author until submitted."""

from __future__ import annotations

from github import GithubException
from github.PullRequest import PullRequest
from github.PullRequestReview import PullRequestReview
from requests import RequestException

from reviewbot.forges.github.api import forge_error


def _pending(pull: PullRequest, me: str) -> list[PullRequestReview]:
    return [r for r in pull.get_reviews()
            if r.state == "PENDING" and r.user is not None and r.user.login == me]


def drop_pending(pull: PullRequest, me: str) -> None:
    """Delete the bot's pending review left by an earlier run: this run's replaces it."""
    try:
        for review in _pending(pull, me):
            review.delete()
    except (GithubException, RequestException) as exc:
        raise forge_error("deleting the earlier pending review", exc) from None


def publish_pending(pull: PullRequest, me: str) -> int:
    """Submit the bot's pending review as comments; how many comments it held."""
    try:
        count = 0
        for review in _pending(pull, me):
            count += pull.get_single_review_comments(review.id).totalCount
            review._requester.requestJsonAndCheck(  # PyGithub has no call for it
                "POST", f"{review.pull_request_url}/reviews/{review.id}/events",
                input={"event": "COMMENT"})
    except (GithubException, RequestException) as exc:
        raise forge_error("publishing the pending review", exc) from None
    return count
