"""One vLLM server's settings become flags in one place: the planner's extra flags last (so a
user's override wins in vLLM's parser), no tool parser flags when there is none."""

from __future__ import annotations

from reviewbot_server.serve_config import ServeConfig

CONFIG = ServeConfig(model="/models/qwen", served_model_name="qwen", host="127.0.0.1",
                     port=8001, max_model_len=65536, dtype="bfloat16",
                     flags=("--max-num-seqs", "32", "--dtype", "float16"))


def test_the_flags_in_order_with_the_planners_last() -> None:
    assert CONFIG.args() == (
        "--served-model-name", "qwen", "--host", "127.0.0.1", "--port", "8001",
        "--dtype", "bfloat16", "--max-model-len", "65536",
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
        "--max-num-seqs", "32", "--dtype", "float16")


def test_vllm_serve_names_the_model_first() -> None:
    assert CONFIG.vllm_serve()[:3] == ("vllm", "serve", "/models/qwen")
    assert CONFIG.vllm_serve()[3:] == CONFIG.args()


def test_no_tool_parser_no_auto_tool_choice() -> None:
    plain = ServeConfig("m", "m", "0.0.0.0", 8000, 4096, "auto", tool_call_parser=None)
    assert "--enable-auto-tool-choice" not in plain.args() and "--tool-call-parser" not in \
        plain.args()
