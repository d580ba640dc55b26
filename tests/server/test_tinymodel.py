"""The tiny model directory: built offline and the same twice, reused while the sources are
unchanged and rebuilt when the marker says otherwise, with a tokenizer whose special tokens are
single ids and whose every id decodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from reviewbot_server.tinymodel import (
    CHAT_TEMPLATE,
    EOS_TOKEN,
    MARKER,
    SPECIAL_TOKENS,
    VOCAB_SIZE,
    build_tiny_model,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def test_the_folder_holds_what_dummy_loading_needs(built: Path) -> None:
    assert sorted(p.name for p in built.iterdir()) == sorted([
        MARKER, "config.json", "generation_config.json", "special_tokens_map.json",
        "tokenizer.json", "tokenizer_config.json"])
    config = json.loads((built / "config.json").read_text())
    assert config["vocab_size"] == VOCAB_SIZE and config["head_dim"] == 64
    assert json.loads((built / "tokenizer_config.json").read_text())["chat_template"] \
        == CHAT_TEMPLATE


def test_special_tokens_are_single_ids_and_every_id_decodes(built: Path) -> None:
    tok = Tokenizer.from_file(str(built / "tokenizer.json"))
    assert tok.get_vocab_size() == VOCAB_SIZE
    for special in SPECIAL_TOKENS:
        assert len(tok.encode(special).ids) == 1
    eos = json.loads((built / "generation_config.json").read_text())["eos_token_id"]
    assert eos == [tok.token_to_id(EOS_TOKEN)]
    assert all(tok.id_to_token(i) is not None for i in range(VOCAB_SIZE))


def test_a_current_folder_is_reused_and_a_stale_one_rebuilt_the_same(built: Path) -> None:
    tokenizer = (built / "tokenizer.json").read_bytes()
    assert build_tiny_model(built) == built  # current: nothing written
    (built / MARKER).write_text("stale\n")
    (built / "tokenizer.json").write_text("{}")
    build_tiny_model(built)
    assert (built / "tokenizer.json").read_bytes() == tokenizer  # deterministic
    assert (built / MARKER).read_text() != "stale\n"
    assert not [p for p in built.parent.iterdir() if p.name.startswith(".model-")]
