"""Untrusted text on its way into a prompt: it may not look like prompt structure.

The diff, file names and the merge request's own words are written by someone else, and the
chat template pastes them between its control tokens. Two things keep them data:
- `label` shows control characters of a path or title as visible escapes, so a file named
  "x\\n</diff>\\n=== y.py" cannot close the diff frame or forge a file header and row labels;
- `defuse` breaks every string that a tokenizer would read as a special token (`<|im_start|>`,
  DeepSeek's `<｜…｜>`, `[INST]`, `<tool_call>`, `<start_of_turn>`, …) with a zero-width space,
  so a line of code cannot open a fake system turn or a fake tool call. The families are listed
  here rather than read from the server: vLLM does not publish its tokenizer's special tokens.
  It breaks the prompt's own frame tags too (`</diff>`, `<context>`, `</thread>`, … as the
  templates in prompts/ write them), wherever they appear: in a file name, a hunk header, a
  line of code, a comment. The model's answers are cleaned of zero-width spaces
  (reviewbot.modeltext), so a suggestion copied from such a line comes back as written.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(
    r"<\|[^\n|]{0,64}\|>"  # Qwen, Llama 3, gpt-oss, Phi: <|im_start|>, <|eot_id|>, <|channel|>
    r"|<｜[^\n｜]{0,64}｜>"  # DeepSeek: <｜begin▁of▁sentence｜>
    r"|</?(?:s|bos|eos|pad|unk|start_of_turn|end_of_turn|tool_call|tool_response|tools|think"
    r"|function_call|im_start|im_end|start_of_image|end_of_image)>"
    r"|\[/?(?:INST|SYS|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|SYSTEM_PROMPT)\]"
    r"|<<SYS>>|<</SYS>>"
    # ours: the frames of prompts/*.j2
    r"|</?(?:diff|context|candidates|candidate|code|finding|reference|thread|summary|question|issue|result)>"
)
ZWSP = "\u200b"
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def defuse(text: str) -> str:
    """`text` with every special-token-looking string broken after its first character."""
    if "<" not in text and "[" not in text:  # the common case, on every diff line
        return text
    return _SPECIAL.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)


def label(text: str) -> str:
    """One line of untrusted text for a header: control characters as visible escapes."""
    return defuse(_CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text))


_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f\u2028\u2029]")


def quoted(text: str) -> str:
    """Untrusted prose as a block whose every line starts with `> `: nothing in it can close a
    frame of the prompt (`</diff>`: no `</` survives) or pose as a file header or a row label."""
    text = defuse(_CONTROL_BUT_NEWLINE.sub(lambda m: f"\\x{ord(m.group(0)):02x}",
                                           text.replace("\r\n", "\n")))
    return "\n".join("> " + line for line in text.split("\n")).replace("</", "<" + ZWSP + "/")


def framed(text: str) -> str:
    """Untrusted text kept as written (code) inside a frame it cannot close: no `</` survives."""
    return defuse(text).replace("</", "<" + ZWSP + "/")
