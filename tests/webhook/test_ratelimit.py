"""The token bucket (reviewbot.webhook.ratelimit): a burst, then the rate, per key, and a
bounded memory of keys under a flood of distinct sources."""

from __future__ import annotations

from reviewbot.webhook.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_rate_for_each_key_on_its_own() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b")  # another source has its own bucket
    clock.now = 0.5  # one token back at 2 a second
    assert [limiter.allow("a") for _ in range(2)] == [True, False]
    clock.now = 100.0  # refilled to the burst, never beyond
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]


def test_refilled_buckets_are_forgotten_first_and_a_flood_stays_bounded() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=2, max_sources=2, clock=clock)
    limiter.allow("old")
    clock.now = 10.0  # "old" has refilled: forgetting it changes nothing
    assert limiter.allow("busy") and limiter.allow("busy")  # empty now
    limiter.allow("new")  # a third key: the refilled one goes, the busy one stays empty
    assert set(limiter._buckets) == {"busy", "new"} and not limiter.allow("busy")
    for n in range(1000):  # distinct sources in one instant: none refilled, memory bounded
        limiter.allow(f"flood-{n}")
        assert len(limiter._buckets) <= 3


def test_rate_limiter_refills_and_forgets() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2, burst=4, max_sources=2, clock=lambda: now[0])
    assert [limiter.allow("a") for _ in range(5)] == [True] * 4 + [False]
    now[0] += 0.5
    assert limiter.allow("a") and not limiter.allow("a")
    for source in ("b", "c", "d"):
        limiter.allow(source)
    assert len(limiter._buckets) <= 3
