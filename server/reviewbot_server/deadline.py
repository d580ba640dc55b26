"""HTTP calls that end within their limit by the wall clock, which httpx's timeouts are not:
httpx times each read, so a server that sends its headers and then one byte a second never
times out. Every probe, canary and readiness poll of the server side goes through
`bounded_client`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import cast

import httpx


def bounded_client(timeout: float, headers: dict[str, str] | None = None) -> httpx.Client:
    """An httpx client whose every call (headers and body) ends within `timeout` seconds, or
    within a call's own read timeout when it gives one."""
    return httpx.Client(timeout=timeout, headers=headers,
                        transport=_Deadline(httpx.HTTPTransport(), timeout))


class _Deadline(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, seconds: float) -> None:
        self._inner = inner
        self._seconds = seconds

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = dict(request.extensions.get("timeout") or {})
        seconds = timeouts.get("read") or self._seconds
        deadline = time.monotonic() + seconds
        # every phase gets at most the whole limit; the body's chunks are checked below
        request.extensions["timeout"] = {k: min(v or seconds, seconds) for k, v in
                                         {"connect": None, "read": None, "write": None,
                                          "pool": None, **timeouts}.items()}
        response = self._inner.handle_request(request)
        stream = _Until(cast(httpx.SyncByteStream, response.stream), deadline, request)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=stream, extensions=response.extensions, request=request)

    def close(self) -> None:
        self._inner.close()


class _Until(httpx.SyncByteStream):
    def __init__(self, stream: httpx.SyncByteStream, deadline: float,
                 request: httpx.Request) -> None:
        self._stream, self._deadline, self._request = stream, deadline, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._stream:
            if time.monotonic() > self._deadline:
                raise httpx.ReadTimeout("the answer was still arriving at its deadline",
                                        request=self._request)
            yield chunk

    def close(self) -> None:
        self._stream.close()
