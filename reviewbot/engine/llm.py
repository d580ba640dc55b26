"""The OpenAI-compatible model client: discovery, forced tool calls and guided answers, errors
mapped.

It sees rendered messages and tool schemas, never diffs. Retries with backoff on 429/5xx and
connection errors are the openai client's own (it honours Retry-After); a context-length 400
becomes ContextTooLong so the caller can re-split the chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from reviewbot.deadline import at_most
from reviewbot.engine import server_metrics
from reviewbot.engine.replies import Reply, read_reply
from reviewbot.engine.routing import NO_ROUTE, Route
from reviewbot.engine.tokens import CHAT_TEMPLATE_KWARGS
from reviewbot.errors import (
    BackendUnreachable,
    BadAnswer,
    ContextTooLong,
    ModelNotServed,
    RequestFailed,
    UsageError,
)
from reviewbot.headers import AFFINITY_HEADER
from reviewbot.redact import redact

if TYPE_CHECKING:
    import openai

# a token is rarely more than a few characters, a JSON escape six; the envelope is small
BYTES_PER_TOKEN, ENVELOPE_BYTES = 64, 1 << 20


def answer_bytes(max_tokens: int, n: int = 1) -> int:
    """The most an answer of `n` choices of `max_tokens` each may take: past it, the rest of a
    (hostile or broken) server's answer is not read, and what was read is no completion."""
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * max_tokens * max(1, n)


_ENDPOINT = re.compile(r"/(chat/completions|completions|models|tokenize|embeddings)$")
_CONTEXT_MARKERS = ("context length", "maximum context", "too long", "max_model_len",
                    "maximum model length", "is longer than")



@dataclass(frozen=True)
class Served:
    model: str
    max_model_len: int | None




class ModelClient:
    def __init__(self, base_url: str, api_key: str | None, timeout: float, retries: int,
                 http_client: httpx.Client | None = None) -> None:
        import openai  # a second of imports: only when a model is asked, not for --help

        self.base_url = base_url.rstrip("/")
        self.shown_url = redact(self.base_url)  # for messages: no password of the URL
        endpoint = _ENDPOINT.search(self.base_url)
        if endpoint:  # an endpoint's URL, pasted from a curl line: the API root is before it
            raise UsageError(f"--base-url {self.shown_url} names an endpoint: give the "
                             f"server's API root, {redact(self.base_url[:endpoint.start()])}")
        self._http = http_client or httpx.Client(timeout=timeout)
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "EMPTY",
            timeout=timeout,
            max_retries=retries,
            http_client=http_client,  # type: ignore[arg-type]  # openai types its own httpx fork
        )

    @property
    def root_url(self) -> str:
        """The server root (where vLLM's /tokenize lives), without the /v1 suffix."""
        return self.base_url.removesuffix("/v1")

    def discover(self, wanted: str | None) -> Served:
        """The model to use and its context length, from GET /v1/models."""
        import openai

        try:
            page = self._client.with_options(max_retries=1, timeout=30).models.list()
        except (openai.APIConnectionError, openai.APITimeoutError):
            raise BackendUnreachable(f"cannot reach the model server at {self.shown_url}") from None
        except openai.AuthenticationError:
            raise BackendUnreachable(
                f"the model server at {self.shown_url} rejected the API key (HTTP 401)") from None
        except openai.APIStatusError as exc:
            hint = ("; vLLM's OpenAI API is under /v1: did you mean "
                    f"{self.shown_url.rstrip('/')}/v1?") \
                if exc.status_code == 404 and not self.shown_url.rstrip("/").endswith("/v1") else ""
            raise BackendUnreachable(
                f"the model server at {self.shown_url} answered {exc.status_code} to GET /models"
                f"{hint}") from None
        models = list(page.data)
        if not models:
            raise BackendUnreachable(f"the model server at {self.shown_url} serves no model")
        names = [m.id for m in models]
        chosen = next((m for m in models if m.id == wanted), None) if wanted else models[0]
        if chosen is None:
            raise ModelNotServed(f"model {wanted!r} is not served at {self.shown_url}; "
                                 f"served: {', '.join(names)}")
        max_len = getattr(chosen, "max_model_len", None) or (chosen.model_extra or {}).get(
            "max_model_len")
        return Served(chosen.id, int(max_len) if max_len else None)

    def kv_tokens(self) -> int | None:
        """The server's KV cache in tokens, or None when it does not say: how many chunks it
        can work on at once."""
        text = self._metrics()
        return server_metrics.kv_tokens(text) if text is not None else None

    def server_load(self) -> server_metrics.Load | None:
        """The server's load now (requests waiting, KV cache in use), or None if unknown."""
        text = self._metrics()
        return server_metrics.load(text) if text is not None else None

    def _metrics(self) -> str | None:
        """A bounded prefix of the server's /metrics text, or None."""
        try:
            with self._http.stream("GET", self.root_url + "/metrics", headers=self._auth,
                                   timeout=10) as response:
                if response.status_code != 200:
                    return None
                body = b""
                for part in response.iter_bytes():
                    body += part
                    if len(body) > server_metrics.METRICS_BYTES:
                        break
        except httpx.HTTPError:
            return None
        return body[:server_metrics.METRICS_BYTES].decode("utf-8", "replace")

    def call_tool(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                  name: str, max_tokens: int, temperature: float, n: int = 1,
                  route: Route = NO_ROUTE, frequency_penalty: float = 0.0,
                  schema: dict[str, Any] | None = None, free: bool = False) -> Reply:
        """A forced call of the tool `name`, with every tool of `tools` sent (the same list in
        every pass keeps the prompt prefix shared); with no tools, a free answer taken as the
        arguments of `name`. With a `schema`, the answer is guided to it as `response_format`
        and no tool is called (`tools` are still sent: they are the prompt's prefix) and read
        as the arguments of `name`. `free`: a plain answer in words (`tools` still sent, as the
        prompt's prefix, with `tool_choice` "none"), read from each sample's `text`. `route`:
        see Route."""
        import openai

        asked: dict[str, Any] = {"tools": tools} if tools else {}
        if schema is not None:
            asked["response_format"] = {"type": "json_schema", "json_schema": {
                "name": name, "schema": schema, "strict": True}}
        if tools:
            asked["tool_choice"] = "none" if schema is not None or free else {
                "type": "function", "function": {"name": name}}
        penalty = {"frequency_penalty": frequency_penalty} if frequency_penalty else {}
        try:
            with at_most(answer_bytes(max_tokens, n)):
                response = self._client.chat.completions.create(  # type: ignore[call-overload]
                    model=model,
                    messages=messages,  # plain dicts: the schema is ours, not openai's types
                    **asked,
                    **penalty,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    n=n,
                    extra_headers={AFFINITY_HEADER: route.key} if route.key else None,
                    extra_body={"chat_template_kwargs": CHAT_TEMPLATE_KWARGS,
                                **({"priority": route.priority} if route.priority is not None
                                   else {})},
                )
        except openai.BadRequestError as exc:
            text = str(exc).lower()
            if any(marker in text for marker in _CONTEXT_MARKERS):
                raise ContextTooLong(redact(str(exc))) from None
            raise RequestFailed(f"the server rejected the request: {_short(exc)}") from None
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise RequestFailed(f"{type(exc).__name__} talking to {self.shown_url}") from None
        except openai.AuthenticationError:
            raise RequestFailed(f"the model server at {self.shown_url} rejected the API key "
                                "(HTTP 401)") from None
        except openai.APIStatusError as exc:
            raise RequestFailed(f"HTTP {exc.status_code} from {self.shown_url}: {_short(exc)}") from None
        except (openai.APIError, ValueError, TypeError) as exc:  # a 200 that is no completion
            raise BadAnswer(f"the answer is not a chat completion ({type(exc).__name__})") from None
        return read_reply(response, name)


def _short(exc: openai.APIError) -> str:
    return redact(" ".join(str(exc.message).split()))[:300]
