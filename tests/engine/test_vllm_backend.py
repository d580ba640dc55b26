"""What the engine relies on from the real vLLM server (CPU build, tiny random model)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import VllmServer

pytestmark = pytest.mark.vllm

VERDICT_TOOL = {
    "type": "function",
    "function": {
        "name": "report_verdict",
        "description": "Report the verdict for this change.",
        # strict: vLLM 0.32's hermes structural tag pins argument schemas only for strict
        # tools; without it a forced call may carry any JSON (a string, `null`).
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"verdict": {"type": "string", "enum": ["ok", "needs-work"]}},
            "required": ["verdict"],
            "additionalProperties": False,
        },
    },
}
NOTE_TOOL = {
    "type": "function",
    "function": {
        "name": "add_note",
        "description": "Attach a note to a line of the diff.",
        "parameters": {
            "type": "object",
            "properties": {"line": {"type": "integer"}, "text": {"type": "string"}},
            "required": ["line", "text"],
        },
    },
}
MESSAGES = [
    {"role": "system", "content": "You review code."},
    {"role": "user", "content": "Review: +def add(a, b): return a - b"},
]


def test_models_reports_max_model_len(vllm_server: VllmServer) -> None:
    resp = httpx.get(f"{vllm_server.base_url}/models", timeout=30)
    resp.raise_for_status()
    (model,) = resp.json()["data"]
    assert model["id"] == vllm_server.model
    assert model["max_model_len"] == vllm_server.max_model_len


def _count(server: VllmServer, tools: list[dict[str, object]]) -> int:
    body: dict[str, object] = {"model": server.model, "messages": MESSAGES}
    if tools:
        body["tools"] = tools
    resp = httpx.post(f"{server.root_url}/tokenize", json=body, timeout=30)
    resp.raise_for_status()
    data = resp.json()
    assert data["max_model_len"] == server.max_model_len
    assert data["count"] == len(data["tokens"])
    return int(data["count"])


def test_tokenize_counts_template_and_tools(vllm_server: VllmServer) -> None:
    bare = _count(vllm_server, [])
    one = _count(vllm_server, [VERDICT_TOOL])
    two = _count(vllm_server, [VERDICT_TOOL, NOTE_TOOL])
    assert 0 < bare < one < two
    # The tool schema is rendered into the prompt, so it costs at least its JSON's bytes / 8.
    assert two - one >= len(json.dumps(NOTE_TOOL)) // 8


def test_forced_named_tool_call_has_parseable_arguments(vllm_server: VllmServer) -> None:
    """Guided decoding makes every finished call valid; a random model may instead pad
    whitespace up to max_tokens (finish_reason "length", no call). Seeded, so repeatable;
    three seeds because the tokenizer, and so the sampled path, follows the package's code."""
    finished = []
    for seed in (0, 1, 2):
        resp = httpx.post(
            f"{vllm_server.base_url}/chat/completions",
            json={
                "model": vllm_server.model,
                "messages": MESSAGES,
                "tools": [VERDICT_TOOL, NOTE_TOOL],
                "tool_choice": {"type": "function", "function": {"name": "report_verdict"}},
                "max_tokens": 256,
                "temperature": 1.0,  # at 0 the random model pads whitespace every time
                "seed": seed,
            },
            timeout=120,
        )
        resp.raise_for_status()
        choice = resp.json()["choices"][0]
        calls = choice["message"].get("tool_calls") or []
        if not calls:
            assert choice["finish_reason"] == "length", choice
            continue
        assert len(calls) == 1, choice
        assert calls[0]["function"]["name"] == "report_verdict"
        arguments = json.loads(calls[0]["function"]["arguments"])
        assert arguments in ({"verdict": "ok"}, {"verdict": "needs-work"})
        finished.append(arguments)
    assert finished, "no forced call finished within 256 tokens in 3 seeded tries"


def test_engines_for_one_server_share_one_budget_sized_from_its_kv_cache(
        vllm_server: VllmServer) -> None:
    """Issue 36: the listener's workers and eval draw on one budget per server, and the
    server's /metrics says its load."""
    from reviewbot.config import resolve
    from reviewbot.engine.build import make_engine

    settings = resolve({"base_url": vllm_server.base_url, "max_output_tokens": 256}, env={})
    first, second = make_engine(settings), make_engine(settings)
    assert first.budget is not None and first.budget is second.budget
    assert first.budget.capacity == first.client.kv_tokens() > 65_536
    load = first.client.server_load()  # what replicas of one server go by: its own gauges
    assert load is not None and load.running >= 0 and load.waiting >= 0
    assert 0.0 <= load.kv_used <= 1.0
