"""The warnings a plan carries, each for the trap it names: Turing's missing bf16 and its
attention backend, TP over PCIe, GPUs a TP size leaves idle, placeholder hosts, YaRN, fp8 KV,
a 4-bit plan without a published checkpoint; and none of those on a card without the trap."""

from __future__ import annotations

from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.notes import collect
from reviewbot_server.plan.planner import plan


def _said(notes: tuple[str, ...], *phrases: str) -> list[str]:
    return [p for p in phrases if not any(p in n for n in notes)]


def test_turing_gets_its_traps_named() -> None:
    notes = collect(plan("4xT4", load_model("Qwen2.5-Coder-7B")))
    assert _said(notes, "has no bf16: serving in float16", "overflows to inf",
                 "--attention-backend TRITON_ATTN", "vllm#36802", "TP=2 over PCIe") == []


def test_a_card_without_those_traps_gets_none_of_their_notes() -> None:
    notes = collect(plan("1xH200", load_model("Qwen2.5-Coder-7B")))
    assert not any(word in n for n in notes
                   for word in ("bf16", "TRITON_ATTN", "PCIe", "placeholders", "no native FP8"))


def test_machines_beyond_the_first_are_placeholders_to_firewall() -> None:
    notes = collect(plan("2xA10", load_model("Qwen2.5-Coder-7B"), nodes=3))
    assert _said(notes, "hosts node1..node3 are placeholders", "VLLM_API_KEY") == []


def test_a_context_beyond_the_native_one_names_yarn_and_its_cost() -> None:
    notes = collect(plan("1xH200", load_model("Qwen2.5-Coder-7B"), max_model_len=65536))
    assert _said(notes, "static YaRN factor 2.0", "may cost a little quality") == []


def test_fp8_kv_says_what_it_costs() -> None:
    notes = collect(plan("1xH100", load_model("Qwen2.5-Coder-7B"), kv_cache_dtype="fp8"))
    assert _said(notes, "KV cache in fp8: half the bytes per token") == []


def test_a_4_bit_plan_for_a_model_with_no_such_checkpoint_says_to_bring_one() -> None:
    notes = collect(plan("1xRTX4090", load_model("Qwen3.5-35B-A3B"), quantization="awq"))
    assert _said(notes, "has no published AWQ", "cannot quantize to 4 bit while loading") == []
