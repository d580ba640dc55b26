"""The exact counter: vLLM's POST /tokenize, which applies the chat template and the tool
schemas, so a request's count is exact; texts go in batches, transient failures are retried."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import tenacity

from reviewbot.engine.tokens import CHAT_TEMPLATE_KWARGS, Cache, Messages, Tools
from reviewbot.errors import BackendError


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
    BATCH_CHARS = 200_000  # per /tokenize call: a 1 MB change is counted in 5 at once
    BATCHES_AT_ONCE = 8

    def __init__(self, root_url: str, model: str, client: httpx.Client,
                 headers: dict[str, str] | None = None) -> None:
        self._url = root_url.rstrip("/") + "/tokenize"
        self._model = model
        self._http = client
        self._headers = headers or {}
        self._cache = Cache()
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

            batches: list[list[int]] = [[]]
            size = 0
            for i, text in enumerate(todo):
                if sep in text:  # would be miscounted when joined: count it on its own
                    out[i] = one(text)
                    continue
                batches[-1].append(i)
                size += len(text)
                if size >= self.BATCH_CHARS:
                    batches.append([])
                    size = 0
            # the batches at once: the first request waits for these counts, and the server
            # tokenizes and answers several faster than one of their joint size
            with ThreadPoolExecutor(max_workers=self.BATCHES_AT_ONCE) as pool:
                list(pool.map(joined, filter(None, batches)))
            return [out[i] for i in range(len(todo))]

        return self._cache.get_many(texts, many)

    def count_request(self, messages: Messages, tools: Tools) -> int:
        return self._post({"messages": messages, "tools": tools, "add_generation_prompt": True,
                           "chat_template_kwargs": CHAT_TEMPLATE_KWARGS})

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
