"""The model client against a fake OpenAI-compatible server: discovery (the model, its context,
each way it fails as one line naming the server without its password), and the request a
forced call, a guided answer and a free answer each send."""

from __future__ import annotations

import pytest

from reviewbot.engine.llm import ModelClient
from reviewbot.errors import (
    BackendUnreachable,
    ContextTooLong,
    ModelNotServed,
    RequestFailed,
    UsageError,
)
from tests.fake_openai import FakeOpenAI, Reply

OK = Reply(tool_args={"summary": "ok", "findings": []})
MESSAGES = [{"role": "user", "content": "review"}]
TOOLS = [{"type": "function", "function": {"name": "report_findings", "parameters": {}}}]


def _client(url: str) -> ModelClient:
    return ModelClient(url, None, timeout=10, retries=0)


def test_discovery_names_the_model_and_its_context() -> None:
    with FakeOpenAI(lambda body, n: OK, model="qwen", max_model_len=16384) as server:
        served = _client(server.base_url).discover(None)
        assert (served.model, served.max_model_len) == ("qwen", 16384)
        with pytest.raises(ModelNotServed, match="'other' is not served .*; served: qwen"):
            _client(server.base_url).discover("other")


def test_a_root_url_without_v1_gets_the_hint_and_an_endpoint_is_refused() -> None:
    with FakeOpenAI(lambda body, n: OK) as server:
        root = server.base_url.removesuffix("/v1")
        with pytest.raises(BackendUnreachable, match="did you mean .*/v1\\?"):
            _client(root).discover(None)
    with pytest.raises(UsageError, match="names an endpoint: give the server's API root"):
        _client("http://h/v1/chat/completions")


def test_an_unreachable_server_is_named_without_its_password() -> None:
    with pytest.raises(BackendUnreachable, match="cannot reach") as caught:
        _client("http://bot:hunter2@127.0.0.1:9/v1").discover(None)
    assert "hunter2" not in str(caught.value)


def test_a_forced_call_names_its_tool_and_a_guided_answer_calls_none() -> None:
    with FakeOpenAI(lambda body, n: OK) as server:
        client = _client(server.base_url)
        client.call_tool("fake", MESSAGES, TOOLS, "report_findings", 64, 0.0)
        client.call_tool("fake", MESSAGES, TOOLS, "report_findings", 64, 0.0, schema={})
        client.call_tool("fake", MESSAGES, TOOLS, "report_findings", 64, 0.0, free=True)
        client.call_tool("fake", MESSAGES, [], "report_findings", 64, 0.0)
        forced, guided, free, json_answer = server.requests
    assert forced["tool_choice"] == {"type": "function", "function": {"name": "report_findings"}}
    assert guided["tool_choice"] == "none" and guided["response_format"]["type"] == "json_schema"
    assert free["tool_choice"] == "none" and "response_format" not in free
    assert "tools" not in json_answer and "tool_choice" not in json_answer
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in server.requests)


def test_a_request_too_long_for_the_context_is_told_apart_from_other_refusals() -> None:
    with FakeOpenAI(lambda body, n: OK, max_model_len=100) as server, \
            pytest.raises(ContextTooLong):
        _client(server.base_url).call_tool("fake", MESSAGES, TOOLS, "report_findings", 500, 0.0)
    refused = Reply(status=400, error="bad tool_choice")
    with FakeOpenAI(lambda body, n: refused) as server, \
            pytest.raises(RequestFailed, match="rejected the request: .*bad tool_choice"):
        _client(server.base_url).call_tool("fake", MESSAGES, TOOLS, "report_findings", 64, 0.0)
