"""Where and when a review's requests are served (reviewbot.engine.routing): the affinity key,
and request priorities for a server that schedules by them (`priority_scheduling`): each review's
requests carry its virtual deadline, so a small review passes a large one that started a little
earlier and none waits forever."""

from __future__ import annotations

import time
from typing import Any

import pytest

from reviewbot.config import parse_text
from reviewbot.diff import parse
from reviewbot.engine.routing import CHUNK_SECONDS, review_priority
from reviewbot.errors import UsageError
from tests.engine.test_candidates import candidates
from tests.engine.test_orchestrator import engine_for, finding, make_diff
from tests.fake_openai import FakeOpenAI, Reply, asked, row_ranges


def test_a_small_review_passes_a_large_one_that_started_a_little_earlier() -> None:
    large = review_priority(1_000.0 + 1_767_225_600, 24)
    assert review_priority(1_010.0 + 1_767_225_600, 1) < large  # 10 s later, 1 chunk
    # whatever its size, a review that started long enough ago comes first
    assert review_priority(1_000.0 + 24 * CHUNK_SECONDS + 1_767_225_600, 1) > large


def _script(body: dict[str, Any], n: int) -> Reply:
    if asked(body) == "verify_findings":
        return Reply(tool_name="verify_findings", tool_args={"verdicts": {"1": {
            "reason": "r", "keep": True, "severity": "major", "confidence": 0.9}}})
    lo, _ = row_ranges(body)[0]
    return Reply(tool_args={"summary": "s", "findings": [finding(lo)]})


def test_every_request_of_a_review_carries_its_priority_and_a_larger_review_a_later_one(
        ) -> None:
    with FakeOpenAI(_script, max_model_len=8000) as server:
        before = time.time()
        engine_for(server, priority_scheduling=True, verify=True, chunk_tokens=2600).review(
            parse(make_diff(files=1, hunks=1)))
        small = [b["priority"] for b in server.requests]
        server.requests.clear()
        engine_for(server, priority_scheduling=True, chunk_tokens=2600).review(
            parse(make_diff(files=12, hunks=2, lines=40)))
        large = [b["priority"] for b in server.requests]
    assert len(small) == 2 and len(set(small)) == 1  # the finding and the verification
    assert small[0] >= review_priority(before, 1)
    assert len(large) > 2 and len(set(large)) == 1 and large[0] > small[0]


def test_without_the_setting_no_request_carries_a_priority() -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        return Reply(tool_args=candidates(body)) if asked(body) == "report_findings" else \
            Reply(tool_name="verify_findings", tool_args={"verdicts": {}})

    with FakeOpenAI(script, max_model_len=8000) as server:
        engine_for(server, verify=True).review(parse(make_diff(files=1, hunks=1)))
    assert server.requests and all("priority" not in b for b in server.requests)


def test_a_file_cannot_turn_priorities_off_to_jump_the_queue() -> None:
    """Without priorities, a review's requests would go at vLLM's default 0: ahead of every
    review that carries one. Only the operator (flag or environment) decides."""
    with pytest.raises(UsageError, match="priority_scheduling"):
        parse_text("[reviewbot]\npriority_scheduling = false\n", ".reviewbot.toml")


def test_the_affinity_key_is_one_per_change_and_tells_nothing_of_it() -> None:
    from reviewbot.context import Context, Intent
    from reviewbot.engine.routing import route_key

    changes = parse(make_diff(files=3))
    key = route_key(changes, Context(Intent("Fix the cache")))
    assert key == route_key(parse(make_diff(files=3)), Context(Intent("Fix the cache")))
    assert key != route_key(changes, Context(Intent("Another change")))
    assert len(key) == 16 and all(c in "0123456789abcdef" for c in key)
