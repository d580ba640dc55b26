"""Wall-clock limits on HTTP calls, which httpx's timeouts are not.

httpx times each read: a server that sends its headers and then one byte a second never times
out. `DeadlineTransport` gives every request a deadline (its own limit, or the caller's
`until()` if sooner, e.g. the review's), clamps every read to what is left of it, and raises
`httpx.ReadTimeout` when a body is still arriving at the deadline. Inside `at_most(n)` it also
stops reading a body past n bytes (what is read so far is all the caller gets: a cut answer,
which no parser takes for a whole one), so a hostile server cannot fill the memory. The deadline is per thread:
the engine's worker threads each carry their own. `bounded_client` makes every timeout given to
a client (or to one of its calls) such a limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import httpx

_local = threading.local()


@contextmanager
def until(deadline: float) -> Iterator[None]:
    """Calls made by this thread inside the block end by `deadline` (time.monotonic())."""
    outer = getattr(_local, "deadline", None)
    _local.deadline = deadline if outer is None else min(outer, deadline)
    try:
        yield
    finally:
        _local.deadline = outer


@contextmanager
def at_most(max_bytes: int) -> Iterator[None]:
    """The bodies of calls this thread makes inside the block are read up to `max_bytes`."""
    outer = getattr(_local, "max_bytes", None)
    _local.max_bytes = max_bytes
    try:
        yield
    finally:
        _local.max_bytes = outer


class DeadlineTransport(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        now = time.monotonic()
        timeouts = dict(request.extensions.get("timeout") or {})
        # the request's own read timeout, as a limit on the whole call; else the transport's
        deadline = now + (timeouts.get("read") or self._seconds)
        outer = getattr(_local, "deadline", None)
        if outer is not None:
            deadline = min(deadline, outer)
        left = deadline - now
        if left <= 0:
            raise httpx.ReadTimeout("the deadline passed before the request", request=request)
        request.extensions["timeout"] = {
            k: min(v, left) if v is not None else left
            for k, v in {"connect": None, "read": None, "write": None, "pool": None,
                         **timeouts}.items()}
        response = self._inner.handle_request(request)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_Until(cast(httpx.SyncByteStream, response.stream),
                                            deadline, request,
                                            getattr(_local, "max_bytes", None)),
                              extensions=response.extensions, request=request)

    def close(self) -> None:
        self._inner.close()


def bounded_client(timeout: float, headers: dict[str, str] | None = None) -> httpx.Client:
    """An httpx client whose every call ends within its timeout, however the bytes trickle."""
    return httpx.Client(timeout=timeout, headers=headers,
                        transport=DeadlineTransport(httpx.HTTPTransport(), timeout))


class _Until(httpx.SyncByteStream):
    def __init__(self, stream: httpx.SyncByteStream, deadline: float,
                 request: httpx.Request, max_bytes: int | None = None) -> None:
        self._stream = stream
        self._deadline = deadline
        self._request = request
        self._left = max_bytes

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise httpx.ReadTimeout("the answer was still arriving at its deadline",
                                        request=self._request)
            if self._left is not None:
                chunk = chunk[:self._left]
                self._left -= len(chunk)
            yield chunk
            if self._left == 0:
                return  # the rest is never read

    def close(self) -> None:
        self._stream.close()
