"""How many tokens a request costs, asked of the served model's own tokenizer when possible.

Three counters behind one protocol, best first (the server's wrapped in `DegradingCounter`,
which falls back to the estimate when /tokenize fails mid-review):
- VllmTokenCounter (reviewbot.engine.vllm_tokens): vLLM's POST /tokenize, which applies the chat template and the tool schemas,
  so a request's count is exact;
- LocalTokenCounter: a tokenizer.json (tokenizers library), exact for text, estimated for the
  chat template;
- EstimateTokenCounter: a conservative bytes-based estimate for servers without /tokenize.
The chunker only asks "how many tokens is this?" and never knows which one answered.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, Protocol

from reviewbot.errors import BackendError, UsageError

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]]
# sent with every request and every count: a thinking model (Qwen3.x thinks by default) would
# spend a chunk's answer budget on reasoning; templates that take no such variable ignore it
CHAT_TEMPLATE_KWARGS: dict[str, Any] = {"enable_thinking": False}


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def exact(self) -> bool:
        """True when count_request is what the server itself will count."""
        ...

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text on its own (no special tokens)."""
        ...

    def count_request(self, messages: Messages, tools: Tools) -> int:
        """Tokens of a whole chat request as the server will see it."""
        ...


class Cache:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

    def get_many(self, texts: Sequence[str], compute: Any) -> list[int]:
        keys = [self.key(t) for t in texts]
        missing = {k: t for k, t in zip(keys, texts) if k not in self._counts}
        if missing:
            counts = compute(list(missing.values()))
            self._counts.update(zip(missing.keys(), counts))
        return [self._counts[k] for k in keys]


class EstimateTokenCounter:
    """Never below the real count for code-like text: about 2 bytes per token, rounded up."""

    name = "estimate"
    exact = False
    BYTES_PER_TOKEN = 2.0
    PER_MESSAGE = 8

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return [math.ceil(len(t.encode("utf-8", "replace")) / self.BYTES_PER_TOKEN) for t in texts]

    def count_request(self, messages: Messages, tools: Tools) -> int:
        body = json.dumps(tools, ensure_ascii=False) + "".join(str(m["content"]) for m in messages)
        return self.count_texts([body])[0] + self.PER_MESSAGE * (len(messages) + len(tools))


class LocalTokenCounter:
    """A tokenizer.json; the chat template is approximated by a per-message allowance."""

    name = "tokenizer.json"
    exact = False
    PER_MESSAGE = 8
    TEMPLATE_ALLOWANCE = 64

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer  # light (no torch); imported only when configured

        try:
            self._tok = Tokenizer.from_file(path)
        except Exception as exc:  # noqa: BLE001 - tokenizers raises a bare Exception on a bad file
            raise UsageError(f"cannot load tokenizer {path}: {exc}") from None
        self._cache = Cache()

    def fresh(self) -> LocalTokenCounter:
        """The same loaded tokenizer with an empty cache (loading a 150K vocabulary takes ~1 s)."""
        other = object.__new__(LocalTokenCounter)
        other._tok, other._cache = self._tok, Cache()
        return other

    def _count(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return self._cache.get_many(texts, self._count)

    def count_request(self, messages: Messages, tools: Tools) -> int:
        parts = [json.dumps(tools, ensure_ascii=False)] + [str(m["content"]) for m in messages]
        return sum(self.count_texts(parts)) + self.PER_MESSAGE * len(messages) + self.TEMPLATE_ALLOWANCE


class DegradingCounter:
    """The server's counter until it fails, then a conservative estimate for the rest of the
    review: a `/tokenize` that starts failing mid-review (a vLLM restart behind the balancer, a
    502, an answer without `count`) costs the review its exact counts, never the review.

    The first failure (after the primary's own retries) switches for good, so a dead endpoint
    is not retried for every text. The estimate is `EstimateTokenCounter`'s (never below the
    real count for code-like text) times `MARGIN`; `problem` says what failed, for the stats.
    """

    MARGIN = 1.25

    def __init__(self, primary: TokenCounter, fallback: TokenCounter | None = None,
                 texts: TokenCounter | None = None) -> None:
        self._primary = primary
        self._fallback = fallback or EstimateTokenCounter()
        # a local copy of the served tokenizer counts texts (the pieces of the diff) without a
        # round trip: the first request of a big change waits for no /tokenize of all of it.
        # Requests are still counted by the server, so a chunk's exact check stays exact.
        self._texts = texts
        self.problem: str | None = None

    @property
    def name(self) -> str:
        return self._primary.name if self.problem is None else f"{self._fallback.name} (fallback)"

    def again(self) -> None:
        """Try the server again (at the start of each review: a listener's engine lives long)."""
        self.problem = None

    @property
    def exact(self) -> bool:
        return self.problem is None and self._primary.exact

    def _failed(self, exc: Exception) -> None:
        if self.problem is None:
            self.problem = (str(exc) if isinstance(exc, BackendError)
                            else f"an unusable answer ({type(exc).__name__})")

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        if self._texts is not None and self.problem is None:
            return self._texts.count_texts(texts)
        if self.problem is None:
            try:
                return self._primary.count_texts(texts)
            except (BackendError, KeyError, ValueError, TypeError) as exc:
                self._failed(exc)
        return [math.ceil(n * self.MARGIN) for n in self._fallback.count_texts(texts)]

    def count_request(self, messages: Messages, tools: Tools) -> int:
        if self.problem is None:
            try:
                return self._primary.count_request(messages, tools)
            except (BackendError, KeyError, ValueError, TypeError) as exc:
                self._failed(exc)
        return math.ceil(self._fallback.count_request(messages, tools) * self.MARGIN)
