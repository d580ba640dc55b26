"""What a vLLM server says of itself on /metrics: its KV cache's size, and its load now.

The server's text is untrusted: the caller reads a bounded prefix, and only plain numbers on
lines of the exact metric names count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

METRICS_BYTES = 1 << 20  # vLLM's /metrics is tens of KB; a server may send anything
_NUMBER = r"([0-9]{1,12}(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,3})?)"


@dataclass(frozen=True)
class Load:
    """The requests the server works on and those it holds back for want of room, and the
    share of its KV cache in use (every engine of the server: counts summed, the fullest
    cache)."""

    running: int
    waiting: int
    kv_used: float  # 0 to 1

    def free_tokens(self, kv_tokens: int) -> int:
        """Tokens a new request may take now: none while requests wait for room."""
        return 0 if self.waiting else int(kv_tokens * max(0.0, 1.0 - self.kv_used))


def kv_tokens(text: str) -> int | None:
    """The KV cache in tokens (`vllm:cache_config_info`), or None when the text does not say."""
    info = re.search(r"^vllm:cache_config_info\{([^}\n]{0,8000})\}", text, re.MULTILINE)
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info.group(1))) if info else {}

    def number(name: str) -> int | None:
        value = labels.get(name, "")
        return int(value) if value.isascii() and value.isdigit() and len(value) <= 12 else None

    size = number("kv_cache_size_tokens")
    blocks, block = number("num_gpu_blocks"), number("block_size")
    if size is None and blocks is not None and block is not None:
        size = blocks * block
    return size or None


def load(text: str) -> Load | None:
    """The server's load now, or None when the text lacks one of its gauges."""
    running = _values(text, "vllm:num_requests_running")
    waiting = _values(text, "vllm:num_requests_waiting")
    used = _values(text, "vllm:kv_cache_usage_perc") or _values(text, "vllm:gpu_cache_usage_perc")
    if not running or not waiting or not used:
        return None
    return Load(running=int(sum(running)), waiting=int(sum(waiting)),
                kv_used=min(1.0, max(used)))


def _values(text: str, name: str) -> list[float]:
    pattern = rf"^{re.escape(name)}(?:\{{[^}}\n]{{0,2000}}\}})? {_NUMBER}$"
    return [float(v) for v in re.findall(pattern, text, re.MULTILINE)][:64]
