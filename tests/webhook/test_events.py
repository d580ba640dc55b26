"""Webhook payloads read into events: the forge's API base, GitHub's events, comments that may be
for the bot."""

from __future__ import annotations

import pytest

from reviewbot.forges.markers import ReplyMarker
from reviewbot.webhook.events import (
    Accepted,
    Ignored,
    MalformedPayload,
    github_api_base,
    gitlab_base_url,
    parse_github,
)
from reviewbot.webhook.jobs import QueuedRequest


def test_base_urls() -> None:
    assert gitlab_base_url("https://git.example.com/gitlab/g/sub/p", "g/sub/p") == (
        "https://git.example.com/gitlab"
    )
    assert gitlab_base_url("https://git.example.com:8443/g/p", "") == "https://git.example.com:8443"
    assert github_api_base("https://api.github.com/repos/o/r", "o/r") == "https://api.github.com"
    assert github_api_base("https://ghe.corp/api/v3/repos/o/r", "o/r") == "https://ghe.corp/api/v3"
    with pytest.raises(MalformedPayload):
        github_api_base("https://api.github.com/repos/x/y", "o/r")


def test_github_parse() -> None:
    payload = {"action": "synchronize", "pull_request": {"number": 4, "head": {"sha": "f" * 40}},
               "repository": {"full_name": "o/r", "url": "https://api.github.com/repos/o/r"}}
    result = parse_github("pull_request", payload)
    assert isinstance(result, Accepted)
    # the event is the key, not the (unsigned) delivery id
    assert result.request == QueuedRequest("github", "o/r", 4, "f" * 40, "https://api.github.com",
                                           f"o/r#4@..{'f' * 40}/synchronize")
    assert isinstance(parse_github("push", payload), Ignored)
    with pytest.raises(MalformedPayload, match="pull_request.number must be an integer"):
        parse_github("pull_request", {**payload, "pull_request": {"number": "4"}})


def test_github_comments_are_queued_when_they_may_be_for_the_bot() -> None:
    repo = {"full_name": "o/r", "url": "https://api.github.com/repos/o/r"}
    review = {"action": "created", "repository": repo,
              "comment": {"id": 55, "body": "why?", "in_reply_to_id": 50},
              "pull_request": {"number": 4, "head": {"sha": "a" * 40}}}
    result = parse_github("pull_request_review_comment", review)
    assert isinstance(result, Accepted) and result.names == ("o/r",)
    assert result.request == QueuedRequest("github", "o/r", 4, "a" * 40, "https://api.github.com",
                                           "o/r/review-comment#55", note_id=55)
    talk = {"action": "created", "repository": repo, "comment": {"id": 56, "body": "@bot pause"},
            "issue": {"number": 4, "pull_request": {"url": "…"}}}
    result = parse_github("issue_comment", talk)
    assert isinstance(result, Accepted)
    assert (result.request.note_id, result.request.discussion_id) == (56, "issue")
    assert result.request.delivery_id == "o/r/comment#56" and result.request.head_sha == ""
    ignored = {
        "edited": parse_github("issue_comment", {**talk, "action": "edited"}),
        "plain issue": parse_github("issue_comment", {**talk, "issue": {"number": 4}}),
        "no mention": parse_github("issue_comment", {**talk, "comment": {"id": 57, "body": "ok"}}),
        "own": parse_github("pull_request_review_comment", {**review, "comment": {
            "id": 58, "body": "Withdrawn.\n\n" + ReplyMarker(50).render()}}),
    }
    assert all(isinstance(r, Ignored) for r in ignored.values()), ignored
    with pytest.raises(MalformedPayload, match="comment.id must be an integer"):
        parse_github("issue_comment", {**talk, "comment": {"id": "56", "body": "@bot x"}})
