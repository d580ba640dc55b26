"""Webhook intake: authenticate, filter, deduplicate and enqueue one delivery.

`Intake` receives its dependencies and returns an `Answer`; the Starlette routes only read
the request and write the reply. Order of checks: rate limit → body size → authentication
→ event/JSON/action → allow-list → enqueue. Unauthenticated requests learn nothing else.

Answers: 202 queued (new job) · 200 duplicate (delivery seen) · 200 ignored (event, action
project or forge URL not allowed: 200 so the forge does not disable the hook) · 400 malformed ·
401 bad token/signature · 404 forge not configured · 413 body too large · 429 rate
limited · 503 queue unavailable (the forge may retry; nothing was acknowledged).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from reviewbot.db import DatabaseError
from reviewbot.errors import MalformedPayload
from reviewbot.forges.base import ForgeName
from reviewbot.webhook.events import Accepted, Ignored
from reviewbot.webhook.hooks import hooks
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.ratelimit import RateLimiter
from reviewbot.webhook.settings import WebhookSettings
from reviewbot.webhook.worker import WorkerPool

log = logging.getLogger("reviewbot.webhook")
# notes answered per merge request: a flood of notes (each a job that reads the discussion and
# the author's membership on the bot's token) is cut to a trickle, never to nothing
NOTES_PER_MINUTE, NOTES_BURST = 12.0, 20.0


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, object]


class Intake:
    def __init__(
        self,
        settings: WebhookSettings,
        queue: JobQueue,
        pool: WorkerPool,
        metrics: Metrics,
        limiter: RateLimiter,
    ) -> None:
        self._settings = settings
        self._queue = queue
        self._pool = pool
        self._metrics = metrics
        self._limiter = limiter
        self._notes = RateLimiter(NOTES_PER_MINUTE / 60, NOTES_BURST)
        self._hooks = hooks()

    def _reject(self, forge: ForgeName, status: int, label: str, message: str) -> Answer:
        self._metrics.rejected.labels(forge, label).inc()
        return Answer(status, {"status": "rejected", "reason": message})

    def _ignore(self, forge: ForgeName, label: str, message: str) -> Answer:
        self._metrics.ignored.labels(forge, label).inc()
        return Answer(200, {"status": "ignored", "reason": message})

    def admit(self, forge: ForgeName, source: str) -> Answer | None:
        """Checks made before the body is read: a known forge, rate limit, configuration."""
        if forge not in self._hooks:  # before the metrics: their labels are forge names
            return Answer(404, {"status": "rejected", "reason": "no such forge"})
        self._metrics.received.labels(forge).inc()
        if not self._limiter.allow(source):
            return self._reject(forge, 429, "rate_limited", "too many requests")
        if not self._settings.secrets.get(forge):
            return self._reject(forge, 404, "not_configured", f"{forge} webhook not configured")
        return None

    def too_slow(self, forge: ForgeName) -> Answer:
        limit = self._settings.body_timeout_s
        return self._reject(forge, 408, "body_timeout", f"body not received within {limit:g} s")

    def too_large(self, forge: ForgeName) -> Answer:
        limit = self._settings.max_body_bytes
        return self._reject(forge, 413, "too_large", f"body larger than {limit} bytes")

    def receive(self, forge: ForgeName, headers: Mapping[str, str], body: bytes) -> Answer:
        started = time.perf_counter()
        hook = self._hooks[forge]
        if not hook.authentic(self._settings.secrets.get(forge), headers, body):
            return self._reject(forge, 401, "unauthenticated", "bad or missing token/signature")
        event = headers.get(hook.event_header)
        if hook.pong and event == hook.pong:
            return self._ignore(forge, "ping", "pong")
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            # ValueError: not JSON, or an integer beyond Python's 4,300-digit conversion limit
            return self._reject(forge, 400, "malformed_json",
                                "body is not JSON (or nested too deep, or a number too long)")
        try:
            result = hook.parse(event, payload)
        except MalformedPayload as exc:
            return self._reject(forge, 400, "malformed_payload", str(exc))
        if isinstance(result, Ignored):
            return self._ignore(forge, result.label, result.reason)
        return self._enqueue(forge, result, started)

    def _enqueue(self, forge: ForgeName, accepted: Accepted, started: float) -> Answer:
        name = self._settings.allowed_name(*accepted.names)
        if name is None:
            return self._ignore(forge, "not_allowed", "project not in the allow-list")
        # review exactly what the allow-list admitted (a path, or an id), nothing else
        accepted = replace(accepted, request=replace(accepted.request, project=name))
        if not self._settings.forge_allowed(accepted.request.base_url):
            log.warning("ignored an event for forge %s (not in the forge URLs)",
                        accepted.request.base_url)
            return self._ignore(forge, "forge_not_allowed", "forge URL not allowed")
        req = accepted.request
        if req.note_id is not None and not self._notes.allow(f"{forge} {name} {req.number}"):
            return self._ignore(forge, "notes_rate_limited",
                                "too many notes on this merge request at once: not answered")
        try:
            queued = self._queue.enqueue(accepted.request)
        except DatabaseError as exc:
            log.error("cannot enqueue: %s", exc)
            return self._reject(forge, 503, "queue_unavailable", "queue unavailable, retry later")
        if not queued.created:
            self._metrics.accepted.labels(forge, "duplicate").inc()
            return Answer(200, {"status": "duplicate", "job_id": queued.job_id})
        superseded = queued.superseded_running + queued.superseded_queued
        if superseded:
            self._metrics.reviews.labels("superseded").inc(len(superseded))
        if queued.superseded_running:
            self._pool.cancel(queued.superseded_running)
        self._pool.wake()
        self._metrics.accepted.labels(forge, "created").inc()
        self._metrics.ack_seconds.labels(forge).observe(time.perf_counter() - started)
        log.info("queued job %d: %s %s #%d at %s", queued.job_id, forge, req.project,
                 req.number, req.head_sha[:12])
        return Answer(202, {"status": "queued", "job_id": queued.job_id})
