"""How many tokens a request costs, asked of the served model's own tokenizer when possible.

Three counters behind one protocol, best first (the server's wrapped in `DegradingCounter`,
which falls back to the estimate when /tokenize fails mid-review):
- VllmTokenCounter: vLLM's POST /tokenize, which applies the chat template and the tool schemas,
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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import httpx
import tenacity

from reviewbot.errors import BackendError, UsageError

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]]


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


class _Cache:
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
        self._cache = _Cache()

    def fresh(self) -> LocalTokenCounter:
        """The same loaded tokenizer with an empty cache (loading a 150K vocabulary takes ~1 s)."""
        other = object.__new__(LocalTokenCounter)
        other._tok, other._cache = self._tok, _Cache()
        return other

    def _count(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        return self._cache.get_many(texts, self._count)

    def count_request(self, messages: Messages, tools: Tools) -> int:
        parts = [json.dumps(tools, ensure_ascii=False)] + [str(m["content"]) for m in messages]
        return sum(self.count_texts(parts)) + self.PER_MESSAGE * len(messages) + self.TEMPLATE_ALLOWANCE


class _Transient(BackendError):
    """A /tokenize failure worth another try."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


_BACKOFF = tenacity.wait_exponential_jitter(initial=0.5, max=8)


def _wait(state: tenacity.RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    after = getattr(exc, "retry_after", None)
    return min(float(after), 30.0) if after is not None else float(_BACKOFF(state))


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


class VllmTokenCounter:
    """vLLM's /tokenize: exact, chat template and tool schemas included.

    Many texts are counted in one request: joined by one of the model's special tokens, which the
    tokenizer splits out before BPE, so the ids between two separators are exactly that text's.
    """

    name = "vllm /tokenize"
    exact = True
    SEPARATORS = ("<|endoftext|>", "<|im_end|>", "</s>", "<|end_of_text|>", "<eos>", "<|eot_id|>")
    BATCH_CHARS = 2_000_000

    def __init__(self, root_url: str, model: str, client: httpx.Client,
                 headers: dict[str, str] | None = None) -> None:
        self._url = root_url.rstrip("/") + "/tokenize"
        self._model = model
        self._http = client
        self._headers = headers or {}
        self._cache = _Cache()
        self._separator: tuple[str, int] | None = None

    @tenacity.retry(retry=tenacity.retry_if_exception_type(_Transient),
                    stop=tenacity.stop_after_attempt(6), wait=_wait, reraise=True)
    def _tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        """One /tokenize call; 429, 5xx and dropped connections are retried (Retry-After is
        honoured: a balancer's rate limit answers a review's burst), then fail as BackendError."""
        try:
            response = self._http.post(self._url, json={"model": self._model, **body},
                                       headers=self._headers)
        except httpx.TransportError as exc:
            raise _Transient(f"{type(exc).__name__} talking to {self._url}", None) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Transient(f"HTTP {response.status_code} from {self._url}",
                             _retry_after(response))
        if response.status_code != 200:
            raise BackendError(f"{self._url} answered HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise BackendError(f"{self._url} answered something that is not JSON") from None
        if not isinstance(data, dict):
            raise BackendError(f"{self._url} answered an unexpected JSON value")
        return data

    def _post(self, body: dict[str, Any]) -> int:
        count = self._tokenize(body).get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise BackendError(f"{self._url} answered without a usable count")
        return count

    def _find_separator(self) -> None:
        for text in self.SEPARATORS:
            tokens = self._tokenize({"prompt": text, "add_special_tokens": False}).get("tokens")
            if isinstance(tokens, list) and len(tokens) == 1:
                self._separator = (text, int(tokens[0]))
                return

    def _count_joined(self, texts: list[str]) -> list[int]:
        assert self._separator is not None
        sep, sep_id = self._separator
        tokens = self._tokenize({"prompt": sep.join(texts), "add_special_tokens": False}).get("tokens")
        if not isinstance(tokens, list):
            raise BackendError(f"{self._url} answered without tokens")
        counts, n = [], 0
        for token in tokens:
            if token == sep_id:
                counts.append(n)
                n = 0
            else:
                n += 1
        counts.append(n)
        if len(counts) != len(texts):
            raise ValueError("separator count mismatch")
        return counts

    def count_texts(self, texts: Sequence[str]) -> list[int]:
        def one(text: str) -> int:
            return self._post({"prompt": text, "add_special_tokens": False})

        def many(todo: list[str]) -> list[int]:
            if self._separator is None and len(todo) > 1:
                self._find_separator()
            if self._separator is None or len(todo) == 1:
                with ThreadPoolExecutor(max_workers=8) as pool:
                    return list(pool.map(one, todo))
            sep = self._separator[0]
            out: dict[int, int] = {}

            def joined(indices: list[int]) -> None:
                try:
                    out.update(zip(indices, self._count_joined([todo[j] for j in indices])))
                except ValueError:  # the server split a separator differently: one by one
                    out.update(zip(indices, map(one, (todo[j] for j in indices))))

            batch: list[int] = []
            size = 0
            for i, text in enumerate(todo):
                if sep in text:  # would be miscounted when joined: count it on its own
                    out[i] = one(text)
                    continue
                batch.append(i)
                size += len(text)
                if size >= self.BATCH_CHARS:
                    joined(batch)
                    batch, size = [], 0
            if batch:
                joined(batch)
            return [out[i] for i in range(len(todo))]

        return self._cache.get_many(texts, many)

    def count_request(self, messages: Messages, tools: Tools) -> int:
        return self._post({"messages": messages, "tools": tools, "add_generation_prompt": True})

    @classmethod
    def probe(cls, root_url: str, model: str, client: httpx.Client,
              headers: dict[str, str] | None = None) -> VllmTokenCounter | None:
        """The counter if this server has /tokenize, else None."""
        counter = cls(root_url, model, client, headers)
        try:
            counter._post({"prompt": "probe", "add_special_tokens": False})
        except (BackendError, KeyError, ValueError, TypeError):
            return None
        return counter


class DegradingCounter:
    """The server's counter until it fails, then a conservative estimate for the rest of the
    review: a `/tokenize` that starts failing mid-review (a vLLM restart behind the balancer, a
    502, an answer without `count`) costs the review its exact counts, never the review.

    The first failure (after the primary's own retries) switches for good, so a dead endpoint
    is not retried for every text. The estimate is `EstimateTokenCounter`'s (never below the
    real count for code-like text) times `MARGIN`; `problem` says what failed, for the stats.
    """

    MARGIN = 1.25

    def __init__(self, primary: TokenCounter, fallback: TokenCounter | None = None) -> None:
        self._primary = primary
        self._fallback = fallback or EstimateTokenCounter()
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
