"""A tiny random-weight Qwen2 model directory for `vllm … --load-format dummy`.

Only config, generation config and tokenizer are written: dummy loading initialises the
weights itself. The tokenizer is a byte-level BPE trained on the .py files (sorted) of the
review client when it is installed beside this package (the tiny model serves its demo and
tests, and its prompts are what the model reads: trained on this package alone, the fixed
prompt took so many more tokens that a 4K context held almost nothing else), else on this
package's own. The build is offline and deterministic for a given tree (the marker holds a
hash of the files, so the dir is rebuilt when they change).
Shapes follow docs/notes: head_dim must be 64 (16 kills the CPU attention kernel).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

VERSION = "1"
MARKER = ".reviewbot-tinymodel"
VOCAB_SIZE = 4096
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>")
EOS_TOKEN = "<|im_end|>"

# ChatML with hermes-style tools, as Qwen2.5 renders them, so vLLM's `hermes` parser applies.
CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- else %}
{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def _corpus_files() -> list[Path]:
    client = importlib.util.find_spec("reviewbot")  # found, not imported
    origin = client.origin if client is not None else None
    root = Path(origin).resolve().parent if origin else Path(__file__).resolve().parent
    return sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix())


def _corpus() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in _corpus_files()]


def _fingerprint(texts: list[str]) -> str:
    digest = hashlib.sha256(VERSION.encode())
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()


def train_tokenizer(texts: list[str]) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodes
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    # A small corpus yields fewer merges than VOCAB_SIZE. Fill the rest with reserved tokens
    # (as Qwen does) so that every id the random model can emit decodes to something.
    missing = VOCAB_SIZE - tok.get_vocab_size()
    tok.add_tokens([AddedToken(f"<|reserved_{i}|>", normalized=False) for i in range(missing)])
    return tok


def _config() -> dict[str, object]:
    ids = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "hidden_act": "silu",
        "max_position_embeddings": 65536,
        "max_window_layers": 2,
        "use_sliding_window": False,
        "sliding_window": None,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids[EOS_TOKEN],
    }


def _tokenizer_config() -> dict[str, object]:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 65536,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _is_current(dest: Path, fingerprint: str) -> bool:
    marker = dest / MARKER
    return marker.is_file() and marker.read_text(encoding="utf-8").strip() == fingerprint


def build_tiny_model(dest: Path) -> Path:
    """Write (or reuse) the tiny model at `dest` and return it.

    Built in a sibling temp dir and renamed into place, so concurrent builders (parallel test
    sessions, the demo) never see a half-written directory.
    """
    dest = Path(dest)
    texts = _corpus()
    fingerprint = _fingerprint(texts)
    if _is_current(dest, fingerprint):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        tok = train_tokenizer(texts)
        tok.save(str(tmp / "tokenizer.json"))
        ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
        _write_json(tmp / "config.json", _config())
        _write_json(
            tmp / "generation_config.json",
            {"bos_token_id": ids["<|endoftext|>"], "eos_token_id": [ids[EOS_TOKEN]]},
        )
        _write_json(tmp / "tokenizer_config.json", _tokenizer_config())
        _write_json(tmp / "special_tokens_map.json", {"eos_token": EOS_TOKEN})
        (tmp / MARKER).write_text(fingerprint + "\n", encoding="utf-8")
        if dest.exists():
            if _is_current(dest, fingerprint):  # another builder won the race
                return dest
            shutil.rmtree(dest)
        try:
            os.replace(tmp, dest)
        except OSError:
            if not _is_current(dest, fingerprint):  # lost a race to a different build
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


# How to serve the tiny model so that forced tool calls finish. A random model pads JSON with
# whitespace until max_tokens under guided decoding; vLLM 0.32's structural-tag tool grammar
# allows that whitespace, its JSON-schema path honours disable_any_whitespace. Real models need
# neither setting.
SERVE_ENV = {"VLLM_ENFORCE_STRICT_TOOL_CALLING": "0"}
SERVE_ARGS = ("--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}')
