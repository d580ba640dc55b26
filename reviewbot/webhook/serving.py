"""Slow clients are cut off: uvicorn has no header read timeout, so a client could trickle its
request line and headers forever and hold a connection (slowloris). `GuardedH11Protocol` closes
a connection whose next request's headers are not complete within `header_timeout` seconds of
the connection (or of the previous answer). The body's own deadline is the app's
(`body_timeout_s`)."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from reviewbot.webhook.settings import WebhookSettings


def server_config(app: ASGIApp, settings: WebhookSettings, host: str, port: int,
                  log_level: str) -> uvicorn.Config:
    """How the listener is served, by the CLI and the tests alike."""
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False,
                          server_header=False, lifespan="on",
                          http=guarded_protocol(settings.header_timeout_s))


def guarded_protocol(header_timeout: float) -> type[H11Protocol]:
    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:  # a request's headers are complete
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request on this connection gets the same deadline

    return GuardedH11Protocol
