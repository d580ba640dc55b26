"""The process's budget of tokens in flight to one server, in memory with real threads: never
more than the KV cache holds out at once, a request larger than it goes alone, a small review
is not starved behind a huge one, a deadline ends the wait with nothing held, replicas of
one server keep to its cache by the load it reports, and answers are held at what they came
to."""

from __future__ import annotations

import itertools
import threading
import time

from reviewbot.engine.budget import (
    ANSWER_GUESS,
    ANSWER_MARGIN,
    ANSWERS_KEPT,
    POLL_S,
    AnswerSizes,
    TokenBudget,
    shared_budget,
)
from reviewbot.engine.server_metrics import Load


def _far() -> float:
    return time.monotonic() + 30


def test_what_is_out_never_exceeds_the_budget_and_a_larger_request_goes_alone() -> None:
    budget, peak, lock = TokenBudget(1000), [0], threading.Lock()

    def request(review: str, tokens: int) -> None:
        with budget.hold(review, tokens, _far()) as granted:
            assert granted
            with lock:
                peak[0] = max(peak[0], budget.out)
                if tokens > 1000:
                    assert budget.out == tokens  # alone
            time.sleep(0.01)

    threads = [threading.Thread(target=request, args=(f"r{i % 3}", 300 if i != 7 else 1500))
               for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert 600 <= peak[0] <= 1500 and budget.out == 0


def test_a_small_review_goes_before_the_rest_of_a_huge_one() -> None:
    budget = TokenBudget(1000)
    order: list[str] = []
    release = threading.Event()
    started = threading.Barrier(2)

    def first() -> None:  # the huge review's first request fills the budget
        with budget.hold("huge", 1000, _far()):
            started.wait()
            release.wait(10)

    def later(review: str) -> None:
        with budget.hold(review, 500, _far()):
            order.append(review)
            time.sleep(0.05)  # a request takes a while

    holder = threading.Thread(target=first)
    holder.start()
    started.wait()
    queued = [threading.Thread(target=later, args=("huge",)) for _ in range(5)]
    for t in queued:
        t.start()
    time.sleep(0.05)  # the huge review's next five wait first
    small = threading.Thread(target=later, args=("small",))
    small.start()
    time.sleep(0.05)
    release.set()
    for t in [holder, *queued, small]:
        t.join(10)
    assert order.index("small") <= 1, order  # behind one of the huge review's at most


def test_a_deadline_ends_the_wait_holding_nothing() -> None:
    budget = TokenBudget(100)
    with budget.hold("a", 100, _far()) as first:
        began = time.monotonic()
        with budget.hold("b", 50, time.monotonic() + 0.2) as second:
            assert first and not second
            assert 0.15 < time.monotonic() - began < 5
        assert budget.out == 100
    assert budget.out == 0


def test_one_budget_per_server_for_the_whole_process() -> None:
    one = shared_budget("http://127.0.0.1:1/v1", 5000)
    assert shared_budget("http://127.0.0.1:1/v1", 5000) is one and one.capacity == 5000
    assert shared_budget("http://127.0.0.1:2/v1", 5000) is not one
    # the server restarted with a larger cache (FP8 KV): the next engine finds it
    assert shared_budget("http://127.0.0.1:1/v1", 9999) is one and one.capacity == 9999


class _Server:
    """A model server in memory: its KV cache of `kv` tokens, and the requests of every
    process (replica) on it, as vLLM's /metrics would count them."""

    def __init__(self, kv: int) -> None:
        self.kv, self.lock = kv, threading.Lock()
        self.requests: list[int] = []
        self.peak = 0
        self.reads = 0

    def load(self) -> Load:
        with self.lock:
            self.reads += 1
            held = sum(self.requests)
            return Load(running=len(self.requests), waiting=0, kv_used=min(1.0, held / self.kv))

    def serve(self, budget: TokenBudget, review: str, tokens: int) -> None:
        with budget.hold(review, tokens, _far()) as granted:
            assert granted
            with self.lock:
                self.requests.append(tokens)
                self.peak = max(self.peak, sum(self.requests))
            time.sleep(0.02)
            with self.lock:
                self.requests.remove(tokens)


def _replicas(server: _Server, probe: bool) -> None:
    """Two listener replicas, each with its own budget of the whole cache, 12 requests each."""
    budgets = [TokenBudget(server.kv, server.load if probe else None) for _ in range(2)]
    threads = [threading.Thread(target=server.serve, args=(budgets[i % 2], f"r{i}", 300))
               for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert all(b.out == 0 for b in budgets)


def test_replicas_of_one_server_keep_to_its_cache_by_its_own_load() -> None:
    """Each replica's budget is the whole cache: alone they would hold twice what it has; the
    server's load keeps them within it (one request over at most, each replica's first)."""
    apart, shared = _Server(1000), _Server(1000)
    _replicas(apart, probe=False)
    _replicas(shared, probe=True)
    assert apart.peak > 1000 + 300
    assert shared.peak <= 1000 + 300 and shared.reads > 0


def test_the_servers_load_is_read_at_most_every_poll_and_waiting_requests_stop_sends() -> None:
    readings: list[Load] = [Load(running=4, waiting=3, kv_used=0.2)] * 3
    calls: list[float] = []

    def probe() -> Load:
        calls.append(time.monotonic())
        return readings.pop(0) if readings else Load(running=2, waiting=0, kv_used=0.2)

    budget = TokenBudget(1000, probe)
    with budget.hold("a", 100, _far()):
        began = time.monotonic()
        with budget.hold("b", 100, _far()) as granted:  # neighbours wait at the server: hold
            waited = time.monotonic() - began
    assert granted and waited >= 2 * POLL_S
    assert len(calls) == 4
    assert all(b - a >= POLL_S * 0.9 for a, b in itertools.pairwise(calls))


def test_alone_on_the_server_or_with_nothing_out_the_servers_load_never_holds_a_request() -> None:
    readings = [Load(running=1, waiting=0, kv_used=1.0), Load(running=9, waiting=5, kv_used=1.0)]
    budget = TokenBudget(1000, lambda: readings[0])
    began = time.monotonic()
    with budget.hold("a", 100, _far()):
        with budget.hold("a", 100, time.monotonic() + 5) as ours:  # the full cache is ours
            assert ours
        readings.pop(0)
    with budget.hold("a", 100, _far()) as first:  # nothing of ours out: goes, full or not
        assert first
    assert time.monotonic() - began < 2 * POLL_S
    unknown = TokenBudget(1000, lambda: None)  # no /metrics: the budget alone decides
    with unknown.hold("a", 600, _far()), unknown.hold("b", 400, time.monotonic() + 1) as second:
        assert second


def test_answers_are_expected_as_long_as_the_longest_recent_one_within_the_room() -> None:
    sizes = AnswerSizes()
    assert sizes.expected(8192) == ANSWER_GUESS  # nothing came back yet
    assert sizes.expected(300) == 300  # never more than the request may write
    for tokens in (70, 400, 90):
        sizes.add(tokens)
    assert sizes.expected(8192) == int(400 * ANSWER_MARGIN)
    assert sizes.expected(100) == 100
    for _ in range(ANSWERS_KEPT):  # the long one is no longer among the recent
        sizes.add(60)
    assert sizes.expected(8192) == int(60 * ANSWER_MARGIN)
    sizes.add(0)
    assert sizes.expected(8192) == int(60 * ANSWER_MARGIN) and AnswerSizes().expected(0) == 1


def test_a_servers_lying_usage_keeps_each_hold_within_the_requests_own_room() -> None:
    """Answer sizes come from the server's `usage`, which is untrusted: a huge count holds the
    request's whole room (never more), a negative or zero one the least (one token)."""
    sizes = AnswerSizes()
    sizes.add(10**15)
    assert sizes.expected(8192) == 8192
    lying = AnswerSizes()
    lying.add(-(10**15))
    assert lying.expected(8192) == 1
