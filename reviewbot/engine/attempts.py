"""One attempts loop for every request (an unusable answer is asked for again while the
deadline allows), and the records of what a chunk's requests came to."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from reviewbot.deadline import until
from reviewbot.engine import answers
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.replies import Reply
from reviewbot.errors import BadAnswer
from reviewbot.findings import Finding
from reviewbot.result import Usage
from reviewbot.withheld import Dropped

ANSWER_ATTEMPTS = 3  # an unusable answer (no call, bad JSON, cut short) is asked for again


@dataclass
class ChunkAnswer:
    """A reviewed chunk: what its finding pass(es) and verification came to."""

    findings: list[Finding] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    invalid: int = 0
    reanchored: int = 0
    candidates: int = 0
    verify_requests: int = 0
    verify_failed: bool = False
    named_requests: int = 0
    summary_only: bool = False

    def add_usage(self, reply: Reply) -> None:
        self.usage += reply.usage


@dataclass
class Asked:
    """The finding requests of one chunk: the usable samples' parsed answers, the requests
    sent, the answers that could not be used and why the last one could not."""

    usable: list[answers.Parsed] = field(default_factory=list)
    requests: int = 0
    unusable: int = 0
    problem: str = "the review deadline passed"


@dataclass(frozen=True)
class Attempted:
    """What the requests for one chunk came to: a ChunkAnswer, or the exception that ended it."""

    chunk: Chunk
    depth: int
    attempts: int
    unusable: int  # answers that came back but could not be used
    outcome: ChunkAnswer | Exception


def attempts(deadline: float, call: Callable[[], Reply]) -> Iterator[Reply | BadAnswer]:
    """Up to ANSWER_ATTEMPTS calls while the deadline allows, each bounded by it: the reply, or
    the BadAnswer of an answer that is no completion (asked again when the caller goes on);
    ContextTooLong and RequestFailed end the attempts."""
    for _ in range(ANSWER_ATTEMPTS):
        if time.monotonic() >= deadline:
            return
        try:
            with until(deadline):
                reply = call()
        except BadAnswer as exc:
            yield exc
            continue
        yield reply
