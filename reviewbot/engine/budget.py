"""One budget of tokens in flight for every review a process sends to one model server.

Each review sized its concurrency from the whole KV cache, so 16 reviews at once asked for 16
caches' worth and evicted each other's prompt prefixes (issue 36: 15% of prompt tokens cached
at bf16, against 54% when the cache held them all). A request now holds its prompt and answer
tokens of the server's budget while it is out, whoever sends it: the listener's workers and
`eval` share one budget per server. Fair: the next request to go is the oldest of the review
with the fewest tokens out, so a small review behind a huge one waits for one request of it,
not for all.

Reviews in other processes (listener replicas of one server) are not in this budget: the
server's own load says what they hold (`/metrics`, read at most every POLL_S by the request
at the head of the line). Where the server works on more requests than this process has out,
the next one goes only where the server has room for it: no request waiting, and its free KV
tokens, less what this process sent since that reading, at least the request's. Alone on the
server, the budget above is the whole rule; with nothing of its own out, a process always
sends, so a busy neighbour slows it but never stops it.

A request's answer is held at what answers have come to, not at its whole room (`AnswerSizes`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from reviewbot.engine.server_metrics import Load

POLL_S = 0.25  # the server's load is read again when older than this
TRANSIT_S = 1.0  # a request sent this long before a reading may not be in it yet
ANSWER_GUESS = 1024  # tokens a chunk's answers are expected to come to before any came back
# over the longest recent answers: a verification request's prompt repeats the finding answer
ANSWER_MARGIN = 1.5
ANSWERS_KEPT = 32  # the recent answers the expectation is taken from


class AnswerSizes:
    """What a chunk's answers are expected to add to the cache, from the last ANSWERS_KEPT that
    came back: the longest of them, with a margin, within the request's room (its max_tokens).

    vLLM gives a request cache blocks for its answer only as the tokens are decoded. Holding
    the whole room kept 8K tokens for a chunk of many changed lines, beside its 15K-token
    prompt, where the answers came to a few hundred: a third of the budget held for nothing,
    and so a third fewer requests at once. Where an answer runs longer than expected, vLLM
    preempts a request and computes it again later; the next holds grow with that answer."""

    def __init__(self) -> None:
        self._recent: deque[int] = deque(maxlen=ANSWERS_KEPT)
        self._lock = threading.Lock()

    def expected(self, room: int) -> int:
        with self._lock:
            guess = int(max(self._recent) * ANSWER_MARGIN) if self._recent else ANSWER_GUESS
        return max(1, min(room, guess))

    def add(self, tokens: int) -> None:
        with self._lock:
            self._recent.append(tokens)


class TokenBudget:
    def __init__(self, capacity: int, load: Callable[[], Load | None] | None = None) -> None:
        self.capacity = max(1, capacity)
        self.answers = AnswerSizes()
        self._probe = load
        self._reading: tuple[float, Load | None] | None = None  # (when, what the server said)
        self._probing = False
        self._sent: deque[tuple[float, int]] = deque()  # (when, tokens) of recent grants
        self._lock = threading.Condition()
        self._out: dict[str, int] = {}  # tokens out per review
        self._requests_out = 0
        # each review's waiting requests, oldest first: (arrival, tokens)
        self._waiting: dict[str, deque[tuple[int, int]]] = {}
        self._arrivals = itertools.count()

    @property
    def out(self) -> int:
        with self._lock:
            return sum(self._out.values())

    def resize(self, capacity: int) -> None:
        with self._lock:
            self.capacity = max(1, capacity)
            self._lock.notify_all()

    @contextmanager
    def hold(self, review: str, tokens: int, deadline: float,
             answer_room: int = 0) -> Iterator[int]:
        """Wait for room for `tokens` and an answer of up to `answer_room` tokens (held as long
        as answers have come to when the request goes; a request larger than the whole budget
        goes alone) and hold it for the block; yields what it holds, or 0, holding nothing, if
        `deadline` (time.monotonic) came first."""
        held = self._acquire(review, tokens, answer_room, deadline)
        try:
            yield held
        finally:
            if held:
                self._release(review, held)

    def _acquire(self, review: str, tokens: int, answer_room: int, deadline: float) -> int:
        with self._lock:
            me = (next(self._arrivals), tokens)
            queue = self._waiting.setdefault(review, deque())
            queue.append(me)
            try:
                while True:
                    need = tokens + (self.answers.expected(answer_room) if answer_room else 0)
                    if self._turn(review, me, need):
                        room = self._server_room(need)
                        if room:
                            self._grant(review, need)
                            return need
                        if room is None:  # no fresh reading: take one, then look again
                            self._read_load()
                            continue
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return 0
                    # waiting on the server, nothing of ours may return to wake us: poll it
                    self._lock.wait(min(left, POLL_S) if self._turn(review, me, need) else left)
            finally:
                queue.remove(me)
                if not queue:
                    del self._waiting[review]
                self._lock.notify_all()  # the next in line may fit now

    def _turn(self, review: str, me: tuple[int, int], need: int) -> bool:
        """Whether `me` goes next (the server's room aside): the oldest request of the review
        with the fewest tokens out (ties: the oldest), and room for its `need`, or nothing out
        at all."""
        head = min(self._waiting, key=lambda r: (self._out.get(r, 0), self._waiting[r][0][0]))
        if head != review or self._waiting[review][0] is not me:
            return False
        out = sum(self._out.values())
        return out == 0 or out + need <= self.capacity

    def _grant(self, review: str, tokens: int) -> None:
        self._out[review] = self._out.get(review, 0) + tokens
        self._requests_out += 1
        now = time.monotonic()
        self._sent.append((now, tokens))
        while self._sent and self._sent[0][0] < now - TRANSIT_S - POLL_S:
            self._sent.popleft()

    def _server_room(self, tokens: int) -> bool | None:
        """Whether the server has room for `tokens` more (True where nothing of ours is out,
        where its load is unknown, or where all it works on is ours); None when the last
        reading is stale."""
        if self._probe is None or not self._out:
            return True
        if self._probing or self._reading is None \
                or time.monotonic() - self._reading[0] > POLL_S:
            return None if not self._probing else False
        when, load = self._reading
        if load is None or load.running + load.waiting <= self._requests_out:
            return True
        since = sum(n for t, n in self._sent if t >= when - TRANSIT_S)
        return tokens <= load.free_tokens(self.capacity) - since

    def _read_load(self) -> None:
        """A new reading of the server's load, taken without holding the lock."""
        assert self._probe is not None
        self._probing = True
        self._lock.release()
        try:
            load = self._probe()
        finally:
            self._lock.acquire()
            self._probing = False
        self._reading = (time.monotonic(), load)
        self._lock.notify_all()

    def _release(self, review: str, tokens: int) -> None:
        with self._lock:
            self._requests_out -= 1
            left = self._out[review] - tokens
            if left:
                self._out[review] = left
            else:
                del self._out[review]
            self._lock.notify_all()


_SHARED: dict[str, TokenBudget] = {}
_SHARED_LOCK = threading.Lock()


def shared_budget(server: str, capacity: int,
                  load: Callable[[], Load | None] | None = None) -> TokenBudget:
    """The process's budget for the model server at `server` (its URL), made on first use
    with `capacity` tokens (its KV cache) and `load` (how to read the server's load); a later
    engine that finds another cache there (the server restarted with other flags) resizes it."""
    with _SHARED_LOCK:
        budget = _SHARED.get(server)
        if budget is None:
            budget = _SHARED[server] = TokenBudget(capacity, load)
        budget.resize(capacity)
        return budget
