"""Reading a model's config.json: a local folder, sliding-window and nested text configs as their
published layouts, and a hostile file as one line, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewbot_server.errors import UsageError
from reviewbot_server.plan.model import load_model
from reviewbot_server.plan.planner import plan


def test_model_dir_without_config(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no config.json"):
        load_model(str(tmp_path))


def test_local_model_dir(tmp_path: Path) -> None:
    cfg = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
           "intermediate_size": 256, "vocab_size": 4096, "max_position_embeddings": 65536}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    p = plan("1xT4", load_model(str(tmp_path)))
    assert p.instances[0].argv[2] == str(tmp_path.resolve())
    assert ("HF_HUB_OFFLINE", "1") in p.instances[0].env and p.tool_call_parser == "hermes"


def _write(tmp_path: Path, cfg: dict[str, object]) -> str:
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


def test_sliding_window_layers_hold_a_window_not_the_review(tmp_path: Path) -> None:
    """gpt-oss-20b's published architecture: 24 layers alternating 128-token sliding windows
    and full attention, 8 KV heads of 64."""
    cfg = {"architectures": ["GptOssForCausalLM"], "hidden_size": 2880, "num_hidden_layers": 24,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
           "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4,
           "vocab_size": 201088, "sliding_window": 128, "max_position_embeddings": 131072,
           "layer_types": ["sliding_attention", "full_attention"] * 12}
    m = load_model(_write(tmp_path, cfg))
    assert (m.kv_layers, m.sliding_layers, m.sliding_window) == (12, 12, 128)
    p = plan("1xRTX4090", m, quantization="awq")
    assert p.memory.kv_per_token == 12 * 2 * 8 * 64 * p.memory.kv_per_token // (12 * 2 * 8 * 64)
    assert p.memory.state_per_sequence == 12 * (128 + 16) * 2 * 8 * 64 * (
        1 if p.memory.kv_dtype == "fp8" else 2)


def test_gemma_pattern_and_nested_text_config(tmp_path: Path) -> None:
    """Gemma 3 27B's published layout: text_config nested, every 6th layer global, 1,024-token
    windows elsewhere, a SigLIP vision tower beside it."""
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {"hidden_size": 5376, "num_hidden_layers": 62, "num_attention_heads": 32,
                           "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
                           "vocab_size": 262208, "sliding_window": 1024,
                           "sliding_window_pattern": 6, "max_position_embeddings": 131072},
           "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27,
                             "intermediate_size": 4304}}
    m = load_model(_write(tmp_path, cfg))
    assert (m.kv_layers, m.sliding_layers, m.sliding_window) == (10, 52, 1024)
    assert m.vision_params > 0.4e9 and 26e9 < m.param_count < 29e9


@pytest.mark.parametrize("config, says", [
    ('{"hidden_size": Infinity, "num_attention_heads": 16, "num_hidden_layers": 24}',
     "Infinity is not a number"),
    ('{"hidden_size": 1e400, "num_attention_heads": 16, "num_hidden_layers": 24}',
     "not a finite number"),
    ('{"hidden_size": NaN, "num_attention_heads": 16, "num_hidden_layers": 24}', "NaN"),
    ('{"text_config": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
])
def test_a_hostile_config_json_is_one_line_not_an_internal_error(tmp_path: Path, config: str,
                                                                 says: str) -> None:
    (tmp_path / "config.json").write_text(config)
    with pytest.raises(UsageError, match=says) as caught:
        load_model(str(tmp_path))
    assert "\n" not in str(caught.value)
