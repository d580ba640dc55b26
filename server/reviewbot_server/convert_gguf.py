"""GGUF → a bf16 Hugging Face folder that the CPU build of vLLM serves (it cannot load GGUF).

Run by vLLM's interpreter, as a script (`python convert_gguf.py DIR FILE.gguf OUT`): it needs
torch, transformers, accelerate and gguf, which the review side never installs, and it imports
nothing of reviewbot's.
"""

from __future__ import annotations

import sys
from pathlib import Path


def convert(folder: Path, gguf_name: str, out: Path) -> None:
    # vLLM's interpreter has them; the review side's does not
    import torch  # type: ignore[import-not-found]
    from transformers import AutoModelForCausalLM, AutoTokenizer  # type: ignore[import-not-found]

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_name,
                                                 dtype=torch.bfloat16, low_cpu_mem_usage=True)
    # the dequantized weights are plain bf16: a leftover GGUF quantization config would make
    # vLLM look for a GGUF loader
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: convert_gguf.py DIR FILE.gguf OUT")
    convert(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
