"""A plan's derived figures: reviews at once are a replica's times the replicas on every
machine, and an instance's command line is its typed config's."""

from __future__ import annotations

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan


def test_concurrent_reviews_multiply_over_replicas_and_machines() -> None:
    one = plan("2xA10", load_model("Qwen2.5-Coder-7B"))
    three = plan("2xA10", load_model("Qwen2.5-Coder-7B"), nodes=3)
    assert one.max_concurrent_reviews == one.reviews_per_replica * one.replicas_per_node
    assert three.max_concurrent_reviews == 3 * one.max_concurrent_reviews
    assert one.reviews_per_replica == one.memory.reviews(one.max_model_len) > 0


def test_an_instances_argv_is_its_serve_config() -> None:
    inst = plan("1xH100", load_model("Qwen2.5-Coder-7B")).instances[0]
    assert inst.argv == inst.serve.vllm_serve() and inst.argv[:2] == ("vllm", "serve")
    assert str(inst.port) in inst.argv
