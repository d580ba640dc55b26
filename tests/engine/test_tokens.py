"""Token counting in memory: the estimate's bytes, the cache that asks only for what it has not
counted, and the degrading counter that keeps a review going on a conservative estimate once
the server's count fails, for good, until the next review tries the server again."""

from __future__ import annotations

from collections.abc import Sequence

from reviewbot.engine.tokens import (
    Cache,
    DegradingCounter,
    EstimateTokenCounter,
    Messages,
    Tools,
)
from reviewbot.errors import BackendUnreachable

ESTIMATE = EstimateTokenCounter()


class _Server:
    """A counter that answers `answers` times, then fails as an unreachable server does."""

    name, exact = "vllm /tokenize", True

    def __init__(self, answers: int) -> None:
        self.left, self.calls = answers, 0

    def _once(self) -> None:
        self.calls += 1
        self.left -= 1
        if self.left < 0:
            raise BackendUnreachable("/tokenize: connection refused")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        self._once()
        return [1 for _ in texts]

    def count_request(self, messages: Messages, tools: Tools) -> int:
        self._once()
        return 1


def test_the_estimate_is_two_bytes_a_token_rounded_up() -> None:
    assert ESTIMATE.count_texts(["abc", "é" * 3, ""]) == [2, 3, 0]
    one = ESTIMATE.count_request([{"role": "user", "content": "abcd"}], [])
    assert one == 3 + EstimateTokenCounter.PER_MESSAGE  # "[]" (the tools) and "abcd": 6 bytes


def test_the_cache_counts_each_text_once() -> None:
    asked: list[list[str]] = []

    def compute(texts: list[str]) -> list[int]:
        asked.append(texts)
        return [len(t) for t in texts]

    cache = Cache()
    assert cache.get_many(["aa", "b"], compute) == [2, 1]
    assert cache.get_many(["b", "ccc", "aa"], compute) == [1, 3, 2]
    assert asked == [["aa", "b"], ["ccc"]]


def test_a_failing_server_count_falls_back_for_good_with_a_margin() -> None:
    server = _Server(answers=1)
    counter = DegradingCounter(server)
    assert counter.count_texts(["x" * 40]) == [1] and counter.exact
    assert counter.count_texts(["x" * 40]) == [25]  # 20 estimated × 1.25
    assert counter.problem == "/tokenize: connection refused" and not counter.exact
    # (42 bytes / 2 + 8 for the message) × 1.25, rounded up
    assert counter.count_request([{"role": "user", "content": "x" * 40}], []) == 37
    assert server.calls == 2  # a dead endpoint is not asked again for every text
    assert counter.name == "estimate (fallback)"


def test_the_next_review_tries_the_server_again() -> None:
    server = _Server(answers=0)
    counter = DegradingCounter(server)
    counter.count_texts(["x"])
    server.left = 5
    counter.again()
    assert counter.count_texts(["x"]) == [1] and counter.exact and server.calls == 2


def test_texts_are_counted_locally_while_requests_go_to_the_server() -> None:
    server = _Server(answers=10)
    counter = DegradingCounter(server, texts=ESTIMATE)
    assert counter.count_texts(["abcd"]) == [2] and server.calls == 0
    assert counter.count_request([{"role": "user", "content": "abcd"}], []) == 1
    assert server.calls == 1
