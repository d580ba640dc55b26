"""The attempts loop, in memory: at most ANSWER_ATTEMPTS calls, each inside the deadline (which
reaches the HTTP layer through reviewbot.deadline), none once it has passed; an answer that is
no completion is yielded and asked again, a failed request ends the loop."""

from __future__ import annotations

import time

import pytest

from reviewbot import deadline as deadlines
from reviewbot.engine.attempts import ANSWER_ATTEMPTS, ChunkAnswer, attempts
from reviewbot.engine.replies import Reply
from reviewbot.errors import BadAnswer, RequestFailed
from reviewbot.result import Usage


def test_every_attempt_is_made_while_the_caller_goes_on() -> None:
    calls: list[float | None] = []

    def call() -> Reply:
        calls.append(getattr(deadlines._local, "deadline", None))
        raise BadAnswer("html, not a completion")

    end = time.monotonic() + 60
    got = list(attempts(end, call))
    assert len(got) == ANSWER_ATTEMPTS and all(isinstance(g, BadAnswer) for g in got)
    assert calls == [end] * ANSWER_ATTEMPTS  # each call ran under the deadline


def test_the_caller_stops_at_the_first_usable_reply() -> None:
    n = 0

    def call() -> Reply:
        nonlocal n
        n += 1
        return Reply(samples=[])

    for reply in attempts(time.monotonic() + 60, call):
        assert isinstance(reply, Reply)
        break
    assert n == 1


def test_no_call_once_the_deadline_has_passed() -> None:
    def call() -> Reply:
        raise AssertionError("called after the deadline")

    assert list(attempts(time.monotonic() - 1, call)) == []


def test_a_failed_request_ends_the_attempts() -> None:
    n = 0

    def call() -> Reply:
        nonlocal n
        n += 1
        raise RequestFailed("HTTP 500")

    with pytest.raises(RequestFailed):
        list(attempts(time.monotonic() + 60, call))
    assert n == 1


def test_a_chunk_adds_up_the_usage_of_its_replies() -> None:
    answer = ChunkAnswer()
    answer.add_usage(Reply(samples=[], usage=Usage(100, 40, 7)))
    answer.add_usage(Reply(samples=[], usage=Usage(50, 50, 3)))
    assert answer.usage == Usage(150, 90, 10)
