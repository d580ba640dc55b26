"""One budget of tokens in flight for every review a process sends to one model server.

Each review sized its concurrency from the whole KV cache, so 16 reviews at once asked for 16
caches' worth and evicted each other's prompt prefixes (issue 36: 15% of prompt tokens cached
at bf16, against 54% when the cache held them all). A request now holds its prompt and answer
tokens of the server's budget while it is out, whoever sends it: the listener's workers and
`eval` share one budget per server. Fair: the next request to go is the oldest of the review
with the fewest tokens out, so a small review behind a huge one waits for one request of it,
not for all.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class TokenBudget:
    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._lock = threading.Condition()
        self._out: dict[str, int] = {}  # tokens out per review
        # each review's waiting requests, oldest first: (arrival, tokens)
        self._waiting: dict[str, deque[tuple[int, int]]] = {}
        self._arrivals = itertools.count()

    @property
    def out(self) -> int:
        with self._lock:
            return sum(self._out.values())

    @contextmanager
    def hold(self, review: str, tokens: int, deadline: float) -> Iterator[bool]:
        """Wait for room for `tokens` (a request larger than the whole budget goes alone) and
        hold it for the block; yields False, holding nothing, if `deadline` (time.monotonic)
        came first."""
        granted = self._acquire(review, tokens, deadline)
        try:
            yield granted
        finally:
            if granted:
                self._release(review, tokens)

    def _acquire(self, review: str, tokens: int, deadline: float) -> bool:
        with self._lock:
            me = (next(self._arrivals), tokens)
            queue = self._waiting.setdefault(review, deque())
            queue.append(me)
            try:
                while not self._turn(review, me):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._lock.wait(left)
                self._out[review] = self._out.get(review, 0) + tokens
                return True
            finally:
                queue.remove(me)
                if not queue:
                    del self._waiting[review]
                self._lock.notify_all()  # the next in line may fit now

    def _turn(self, review: str, me: tuple[int, int]) -> bool:
        """Whether `me` goes now: the oldest request of the review with the fewest tokens out
        (ties: the oldest), and room for it, or nothing out at all."""
        head = min(self._waiting, key=lambda r: (self._out.get(r, 0), self._waiting[r][0][0]))
        if head != review or self._waiting[review][0] is not me:
            return False
        out = sum(self._out.values())
        return out == 0 or out + me[1] <= self.capacity

    def _release(self, review: str, tokens: int) -> None:
        with self._lock:
            left = self._out[review] - tokens
            if left:
                self._out[review] = left
            else:
                del self._out[review]
            self._lock.notify_all()


_SHARED: dict[str, TokenBudget] = {}
_SHARED_LOCK = threading.Lock()


def shared_budget(server: str, capacity: int) -> TokenBudget:
    """The process's budget for the model server at `server` (its URL), made on first use
    with `capacity` tokens (its KV cache)."""
    with _SHARED_LOCK:
        budget = _SHARED.get(server)
        if budget is None:
            budget = _SHARED[server] = TokenBudget(capacity)
        return budget
