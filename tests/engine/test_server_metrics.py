"""What the bot reads of a server's /metrics text, which is untrusted: the KV cache's size and
the load now, from the exact gauges only, plain numbers only."""

from __future__ import annotations

from reviewbot.engine.server_metrics import Load, kv_tokens, load

VLLM = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 0.0
vllm:num_requests_waiting{engine="1",model_name="m"} 4.0
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 99.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
vllm:cache_config_info{block_size="16",num_gpu_blocks="1000",engine="0"} 1.0
"""


def test_the_load_of_every_engine_counts_and_the_fullest_cache_speaks() -> None:
    assert load(VLLM) == Load(running=5, waiting=4, kv_used=0.5)
    assert kv_tokens(VLLM) == 16_000
    assert Load(running=5, waiting=4, kv_used=0.5).free_tokens(16_000) == 0  # requests wait
    assert Load(running=5, waiting=0, kv_used=0.25).free_tokens(16_000) == 12_000


def test_a_share_in_full_float_precision_reads_as_the_server_wrote_it() -> None:
    """vLLM writes a busy cache's share as Python prints a float, up to 17 digits after the
    point; read as no load at all, a replica's budget stopped seeing the server exactly when
    it was busy (the H100 run of 2026-12-06 sampled these lines)."""
    text = ('vllm:num_requests_running{engine="0",model_name="qwen3-coder"} 11.0\n'
            'vllm:num_requests_waiting{engine="0",model_name="qwen3-coder"} 21.0\n'
            'vllm:num_requests_waiting_by_reason{engine="0",model_name="qwen3-coder",'
            'reason="deferred"} 21.0\n'
            'vllm:kv_cache_usage_perc{engine="0",model_name="qwen3-coder"} 0.17918798260236435\n'
            'vllm:kv_cache_usage_perc{engine="1",model_name="qwen3-coder"} 6.140905520108e-05\n')
    assert load(text) == Load(running=11, waiting=21, kv_used=0.17918798260236435)


def test_an_older_vllm_names_its_cache_gauge_gpu_cache_usage_perc() -> None:
    text = VLLM.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert load(text) == Load(running=5, waiting=4, kv_used=0.5)


def test_a_hostile_or_partial_text_says_nothing_rather_than_a_wrong_load() -> None:
    assert load("") is None
    assert load(VLLM.replace("vllm:num_requests_waiting{", "other{")) is None  # a gauge missing
    assert load("<html>vllm:num_requests_running 1</html>") is None
    lying = ("vllm:num_requests_running 1\nvllm:num_requests_waiting -3\n"
             "vllm:kv_cache_usage_perc NaN\n")
    assert load(lying) is None  # no negative counts, no NaN
    huge = "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 7\n"
    assert load(huge) == Load(running=1, waiting=0, kv_used=1.0)  # a share is at most all
    spoof = 'vllm:num_requests_running_x 9\nvllm:num_requests_running{a="}"} 1\n'
    assert load(spoof + "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\n") is None
