"""Building an engine from settings against a fake server: the context is the smaller of the
server's and the settings', the counter the most exact the server allows, and the concurrency
what its KV cache holds at once."""

from __future__ import annotations

import pytest

from reviewbot.config import resolve
from reviewbot.engine.build import (
    FALLBACK_CONCURRENCY,
    MAX_CONCURRENCY,
    concurrency_for,
    make_engine,
)
from reviewbot.engine.tokens import DegradingCounter, EstimateTokenCounter
from tests.fake_openai import FakeOpenAI, Reply

OK = Reply(tool_args={"summary": "ok", "findings": []})


def _settings(**values: object):  # type: ignore[no-untyped-def]
    return resolve({"base_url": "http://127.0.0.1:9/v1", **values}, env={})


@pytest.mark.parametrize(("values", "kv_tokens", "chunk", "expected"), [
    ({"concurrency": 3}, 10**6, 16_000, 3),  # the user's figure wins
    ({"concurrency": 0}, None, 16_000, FALLBACK_CONCURRENCY),  # the server does not say
    ({"concurrency": 0}, 64_000, 16_000, 5),  # four fit, one more queued
    ({"concurrency": 0}, 10_000, 16_000, 2),  # never fewer than two
    ({"concurrency": 0}, 10**9, 16_000, MAX_CONCURRENCY),
])
def test_concurrency_from_the_servers_kv_cache(values: dict[str, object], kv_tokens: int | None,
                                               chunk: int, expected: int) -> None:
    assert concurrency_for(_settings(**values), kv_tokens, chunk) == expected


def test_the_context_is_the_smaller_and_the_servers_tokenize_counts() -> None:
    with FakeOpenAI(lambda body, n: OK, max_model_len=8000) as server:
        engine = make_engine(resolve({"base_url": server.base_url, "max_context": 32_000},
                                     env={}))
        assert engine.context == 8000 and engine.model == "fake"
        assert isinstance(engine.counter, DegradingCounter) and engine.counter.exact


def test_without_tokenize_the_count_is_an_estimate() -> None:
    with FakeOpenAI(lambda body, n: OK, max_model_len=8000, tokenize=False) as server:
        engine = make_engine(resolve({"base_url": server.base_url, "max_context": 4000},
                                     env={}))
        assert engine.context == 4000 and isinstance(engine.counter, EstimateTokenCounter)
