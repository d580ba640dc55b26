"""vLLM's metrics as the canary reads them, and the warm-up calls."""

from __future__ import annotations

from reviewbot_server.supervise.canary import EngineLoad, parse_load

NEW = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 100.0
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{engine="0",model_name="m"} 20.0
"""
OLD = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 0.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.1
"""


def test_parse_load_current_names_sums_requests_and_takes_the_fullest_cache() -> None:
    assert parse_load(NEW) == EngineLoad(0.75, 3.0, 4.0, 120.0)


def test_parse_load_older_names() -> None:
    assert parse_load(OLD) == EngineLoad(0.1, 0.0, None, None)


def test_warm_up_sends_one_forced_call_per_size_within_the_context() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    seen: list[dict[str, object]] = []

    def script(body: dict[str, object], attempt: int) -> Reply:
        seen.append(body)
        return Reply(tool_args={"ok": True})

    with FakeOpenAI(script, max_model_len=100_000) as server, httpx.Client() as client:
        root = server.base_url.removesuffix("/v1")
        took = warm_up(client, root, "fake", (16384, 0, 2048, 200_000), 20_000, 10)
    assert sorted(took, key=int) == ["2048", "16384", "18000"]  # 0 dropped, 200K capped
    assert all(isinstance(s, float) for s in took.values())
    lengths = [len(b["messages"][0]["content"]) for b in seen]  # type: ignore[index]
    assert lengths == sorted(lengths) and len(seen) == 3
    assert all(b["tool_choice"] == {"type": "function", "function": {"name": "canary"}}
               for b in seen)


def test_the_warm_up_ends_with_a_burst_sent_as_a_review_sends_its_requests() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    seen: list[dict[str, object]] = []

    def script(body: dict[str, object], attempt: int) -> Reply:
        seen.append(body)
        if body.get("response_format"):
            return Reply(content='{"ok": true}')
        return Reply(tool_args={"ok": True})

    with FakeOpenAI(script, max_model_len=100_000) as server, httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (64,), 8192, 10,
                       burst=4)
    assert sorted(took) == ["64", "burst"] and isinstance(took["burst"], float)
    burst = seen[1:]
    assert len(burst) == 4
    guided = [b for b in burst if b.get("response_format")]
    assert len(guided) == 2 and all(b["tool_choice"] == "none" for b in guided)
    assert sorted(b["temperature"] for b in burst) == [0.0, 0.0, 0.1, 0.1]  # type: ignore[type-var]
    # distinct prompts: each is prefilled, none is served from another's cache alone
    assert len({b["messages"][0]["content"] for b in burst}) == 4  # type: ignore[index]


def test_a_failed_warm_up_burst_is_reported_not_raised() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(lambda body, n: Reply(status=500), max_model_len=100_000) as server, \
            httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (), 8192, 5, burst=2)
    assert took == {"burst": None}


def test_a_failed_warm_up_call_is_reported_not_raised() -> None:
    import httpx

    from reviewbot_server.supervise.canary import warm_up
    from tests.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(lambda body, n: Reply(status=500), max_model_len=100_000) as server, \
            httpx.Client() as client:
        took = warm_up(client, server.base_url.removesuffix("/v1"), "fake", (1024,), 8192, 5)
    assert took == {"1024": None}
