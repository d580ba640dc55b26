"""The process's budget of tokens in flight to one server, in memory with real threads: never
more than the KV cache holds out at once, a request larger than it goes alone, a small review
is not starved behind a huge one, and a deadline ends the wait with nothing held."""

from __future__ import annotations

import threading
import time

from reviewbot.engine.budget import TokenBudget, shared_budget


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
    assert shared_budget("http://127.0.0.1:1/v1", 9999) is one and one.capacity == 5000
    assert shared_budget("http://127.0.0.1:2/v1", 5000) is not one
