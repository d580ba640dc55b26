"""The GPU sweep driver (benchmarks/gpu_plan.py), run here against the real vLLM CPU server:
a call does the plan's runs, a later call does only the runs added since, and a line that is
not a run is ignored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import VllmServer

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "reviewbot/data/sample.diff")


def _call(server: VllmServer, plan: Path, out: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/gpu_plan.py"), "--plan", str(plan), "--out",
         str(out), "--url", server.root_url, "--served-name", server.model],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_later_call_does_only_the_runs_added_to_the_plan(
        tmp_path: Path, vllm_server: VllmServer) -> None:
    plan = tmp_path / "plan.jsonl"
    small = {"max_context": 8192, "chunk_tokens": 1650}
    plan.write_text(
        json.dumps({"id": "bot-small", "kind": "bot", "diff": SAMPLE, "concurrency": 4,
                    "temperature": 0, "settings": small}) + "\n"
        + "not a run\n"
        + json.dumps({"id": "replay-small", "kind": "replay", "diff": SAMPLE, "temperature": 0,
                      "settings": small}) + "\n")
    first = _call(vllm_server, plan, tmp_path / "out1")
    assert [r["id"] for r in first] == ["bot-small", "replay-small"]
    bot, ceiling = first
    # what the driver records, not what the model answered: the tiny model's tokenizer is
    # trained on reviewbot's own sources, so any code change can turn one of its random
    # answers into one cut at max_tokens (an incomplete review, recorded as such)
    assert "error" not in bot and isinstance(bot["complete"], bool), bot.get("error")
    assert bot["chunks"] >= 2 and bot["requests"] >= bot["chunks"]
    assert "error" not in ceiling and ceiling["requests"] == bot["chunks"], ceiling.get("error")
    assert {"prompt_tokens", "cached_tokens", "completion_tokens"} <= bot.keys() & ceiling.keys()
    with plan.open("a") as fh:
        fh.write(json.dumps({"id": "bot-4k-verify", "kind": "bot", "diff": SAMPLE,
                             "temperature": 0, "settings": {**small, "chunk_tokens": 4096,
                                                             "verify": True}}) + "\n")
        fh.write(json.dumps({"id": "two-at-once", "kind": "parallel", "reviews": [[SAMPLE, 2]],
                             "temperature": 0, "settings": small}) + "\n")
    second = _call(vllm_server, plan, tmp_path / "out2")
    assert [r["id"] for r in second] == ["bot-small", "replay-small", "bot-4k-verify", "two-at-once"]
    assert second[:2] == first  # not run again
    assert "error" not in second[2] and isinstance(second[2]["complete"], bool)
    assert "error" not in second[3] and len(second[3]["complete"]) == 2, second[3].get("error")
    assert second[3]["parallel_reviews"] == 2 and second[3]["slowest_s"] <= second[3]["wall_s"]
    firsts = second[3]["first_send_s"]
    assert len(firsts) == 2 and 0 < max(firsts) <= second[3]["last_send_s"] <= second[3]["wall_s"]
    assert 0 < bot["first_send_s"] <= bot["last_send_s"] <= bot["wall_s"]


def test_runs_after_a_server_restart_left_for_later_wait_for_it(
        tmp_path: Path, vllm_server: VllmServer) -> None:
    """A restart that does not fit this call ends it: the runs after it are measured on the
    restarted server in a later call, never on this one."""
    plan = tmp_path / "plan.jsonl"
    plan.write_text(
        json.dumps({"id": "restart", "kind": "server", "args": ["--max-num-batched-tokens",
                                                               "4096"], "estimate_s": 10**6})
        + "\n" + json.dumps({"id": "after", "kind": "bot", "diff": SAMPLE, "temperature": 0,
                             "estimate_s": 1}) + "\n")
    assert _call(vllm_server, plan, tmp_path / "out") == []
