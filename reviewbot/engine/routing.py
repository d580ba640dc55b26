"""Where and when one review's requests are served: one opaque affinity key per review, so a
balancer keeps the review on the replica that caches its prefix, and a request priority that
lets a small review pass a large one without any waiting forever."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from reviewbot.context import Context
from reviewbot.diff import ChangeSet

PRIORITY_EPOCH = 1_767_225_600  # 2026-01-01 UTC: keeps priorities small numbers
CHUNK_SECONDS = 2  # what one chunk adds to a review's virtual deadline (review_priority)


@dataclass(frozen=True)
class Route:
    """Where and when one review's requests are served. `key` goes out as AFFINITY_HEADER, so
    a balancer keeps the review on the replica that caches its prefix; `priority`, when set,
    as vLLM's request priority (lower first), for a server started with
    `--scheduling-policy priority` (other servers ignore it, or refuse it: hence a setting)."""

    key: str = ""
    priority: int | None = None


NO_ROUTE = Route()  # any replica, the server's default order


def review_priority(now: float, chunks: int) -> int:
    """A review's request priority for vLLM (lower first): a virtual deadline, its start plus
    CHUNK_SECONDS a chunk. A small review passes a large one that started a little earlier,
    and none waits forever: whatever its size, a review that started long enough ago comes
    first. Replicas of one server compare the same clock."""
    return int(now - PRIORITY_EPOCH) + CHUNK_SECONDS * chunks


def route_key(changes: ChangeSet, context: Context) -> str:
    """One opaque value per review for the balancer's affinity header: the same for every
    chunk and pass (and for the same change reviewed again), telling nothing of the code."""
    text = "\0".join([context.intent.title, *sorted(f.path for f in changes.files)])
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
