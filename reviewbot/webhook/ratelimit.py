"""A token bucket per key (a client address, a merge request), bounded in the number of keys
it remembers; safe to share between threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    def __init__(
        self,
        rate: float,
        burst: float,
        max_sources: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._max = max_sources
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # source -> (tokens, last seen)
        self._lock = threading.Lock()

    def allow(self, source: str) -> bool:
        with self._lock:
            return self._take(source)

    def _take(self, source: str) -> bool:
        now = self._clock()
        tokens, last = self._buckets.get(source, (self._burst, now))
        tokens = min(self._burst, tokens + (now - last) * self._rate)
        allowed = tokens >= 1.0
        self._buckets[source] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > self._max:
            self._forget_full(now)
        return allowed

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled (forgetting them changes nothing)."""
        refill = self._burst / self._rate
        self._buckets = {s: b for s, b in self._buckets.items() if now - b[1] < refill}
        if len(self._buckets) > self._max:  # a flood of distinct sources: start afresh
            self._buckets.clear()
