"""The exact counter against a local /tokenize of the test's making (a real HTTP server): texts
joined by a special token give the same counts as one by one, failures are retried or named."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from reviewbot.engine.vllm_tokens import VllmTokenCounter
from reviewbot.errors import BackendError
from tests.local_http import Answer, Asked, Start

SEPARATOR, SEPARATOR_ID = "<|endoftext|>", 151643
Tokenize = Callable[[dict[str, Any]], tuple[int, bytes]]


def tokens(prompt: str) -> list[int]:
    """A tokenizer of words: the separator is one special token, every word one token."""
    out: list[int] = []
    for i, part in enumerate(prompt.split(SEPARATOR)):
        if i:
            out.append(SEPARATOR_ID)
        out += [len(w) for w in part.split()]
    return out


def words(body: dict[str, Any]) -> tuple[int, bytes]:
    if "messages" in body:
        return 200, json.dumps({"count": 3 + sum(len(str(m["content"]).split())
                                                 for m in body["messages"])}).encode()
    ids = tokens(body["prompt"])
    return 200, json.dumps({"count": len(ids), "tokens": ids}).encode()


class Tokenizer:
    """POST /tokenize answered by `tokenize`; every body it was sent kept, in order."""

    def __init__(self, start: Start, tokenize: Tokenize) -> None:
        def answer(asked: Asked) -> Answer:
            if asked.path != "/tokenize":
                return Answer(404)
            status, data = tokenize(asked.json())
            return Answer(status, data, {"Retry-After": "0"})

        self.server = start(answer)
        self.url = self.server.url

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [asked.json() for asked in self.server.asked]

    def counter(self) -> VllmTokenCounter:
        return VllmTokenCounter(self.url, "m", httpx.Client(timeout=5))


@pytest.fixture
def serve(local_server: Start) -> Callable[[Tokenize], Tokenizer]:
    return lambda tokenize: Tokenizer(local_server, tokenize)


TEXTS = ["def f(x):", "return x + 1", "", "a b c d e f g", "one"]


def test_texts_joined_by_a_special_token_count_as_they_do_one_by_one(serve) -> None:
    tokenizer = serve(words)
    assert tokenizer.counter().count_texts(TEXTS) == [len(tokens(t)) for t in TEXTS]
    # the separator asked for once, then all five texts in one request
    assert [b["prompt"] for b in tokenizer.bodies] == [SEPARATOR, SEPARATOR.join(TEXTS)]


def test_a_text_holding_the_separator_is_counted_on_its_own(serve) -> None:
    tokenizer = serve(words)
    texts = ["x y", f"a {SEPARATOR} b", "z"]
    assert tokenizer.counter().count_texts(texts) == [2, 3, 1]
    assert {"model": "m", "prompt": texts[1], "add_special_tokens": False} in tokenizer.bodies


def test_a_server_that_splits_the_separator_otherwise_is_asked_text_by_text(serve) -> None:
    def drops_separators(body: dict[str, Any]) -> tuple[int, bytes]:
        status, data = words(body)
        if SEPARATOR in body["prompt"] and body["prompt"] != SEPARATOR:
            answer = json.loads(data)
            answer["tokens"] = [t for t in answer["tokens"] if t != SEPARATOR_ID]
            data = json.dumps(answer).encode()
        return status, data

    assert serve(drops_separators).counter().count_texts(TEXTS) == [len(tokens(t)) for t in TEXTS]


def test_counts_are_kept_so_a_text_is_asked_once(serve) -> None:
    tokenizer = serve(words)
    counter = tokenizer.counter()
    counter.count_texts(["p q r"])
    asked = len(tokenizer.bodies)
    assert counter.count_texts(["p q r"]) == [3] and len(tokenizer.bodies) == asked


def test_a_busy_server_is_asked_again_and_its_answer_used(serve) -> None:
    busy = [2]

    def sometimes(body: dict[str, Any]) -> tuple[int, bytes]:
        busy[0] -= 1
        return (429, b"{}") if busy[0] >= 0 else words(body)

    tokenizer = serve(sometimes)
    messages = [{"role": "user", "content": "four words right here"}]
    assert tokenizer.counter().count_request(messages, []) == 7
    assert len(tokenizer.bodies) == 3
    assert tokenizer.bodies[-1]["add_generation_prompt"] is True


@pytest.mark.parametrize("status, data, says", [
    (404, b"{}", "answered HTTP 404"),
    (200, b"<html>", "not JSON"),
    (200, b"[1, 2]", "unexpected JSON value"),
    (200, b'{"count": -1}', "without a usable count"),
    (200, b'{"count": true}', "without a usable count"),
])
def test_an_unusable_answer_is_a_backend_error(serve, status: int, data: bytes, says: str) -> None:
    counter = serve(lambda body: (status, data)).counter()
    with pytest.raises(BackendError, match=says):
        counter.count_texts(["one text"])


def test_probe_finds_the_counter_only_where_tokenize_answers(serve) -> None:
    http = httpx.Client(timeout=5)
    assert VllmTokenCounter.probe(serve(words).url, "m", http) is not None
    assert VllmTokenCounter.probe(serve(lambda body: (404, b"{}")).url, "m", http) is None
