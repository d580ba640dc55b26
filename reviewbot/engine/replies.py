"""A model server's answer read, whatever shape it came in: the tool calls of each choice (or,
where the server did not parse a call, the JSON the answer holds), the answer's own words,
whether it was cut short, and the tokens it cost. Everything in it is untrusted: a count that
is no whole number counts as 0, and what cannot be read is a BadAnswer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from reviewbot.errors import BadAnswer
from reviewbot.result import Usage

Call = tuple[str, str]  # (tool name, arguments JSON)


@dataclass(frozen=True)
class Sample:
    calls: list[Call]
    truncated: bool  # finish_reason == "length": the call may be cut short
    text: str = ""  # the answer's own words (a free answer: findings_format two-step)


@dataclass(frozen=True)
class Reply:
    samples: list[Sample]  # one per choice (`n` of them: one prefill, n decodes)
    usage: Usage = field(default_factory=Usage)

    @property
    def calls(self) -> list[Call]:
        return self.samples[0].calls

    @property
    def truncated(self) -> bool:
        return self.samples[0].truncated


def read_reply(response: Any, name: str) -> Reply:
    """The tool calls of a completion, whatever shape the server gave it."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadAnswer("the answer has no choices")
    usage = getattr(response, "usage", None)
    return Reply(
        samples=[_sample(choice, name) for choice in choices],
        usage=Usage(
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            # vLLM reports it with --enable-prompt-tokens-details
            cached_tokens=_count(getattr(getattr(usage, "prompt_tokens_details", None),
                                         "cached_tokens", 0)),
            completion_tokens=_count(getattr(usage, "completion_tokens", 0))),
    )


def _count(value: object) -> int:
    """A token count as the server gave it, or 0 where it gave no whole number at or above 0
    (the answer still counts; the budget and the history must not take a lie for a size)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _sample(choice: Any, name: str) -> Sample:
    message = getattr(choice, "message", None)
    if message is None:
        raise BadAnswer("the answer has no message")
    calls = [(c.function.name, c.function.arguments or "")
             for c in (message.tool_calls or [])
             if getattr(c, "type", None) == "function" and getattr(c, "function", None)]
    if not calls and isinstance(message.content, str) and message.content:
        calls = [(name, _arguments_from_content(message.content))]
    text = message.content if isinstance(message.content, str) else ""
    return Sample(calls, getattr(choice, "finish_reason", None) == "length", text)


_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*\})\s*(?:</tool_call>)?", re.DOTALL)
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text, strict=False)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _arguments_from_content(content: str) -> str:
    """A call the server did not parse, or a free answer: a hermes `<tool_call>{"name",
    "arguments"}` block its parser refused (vLLM's parser is strict about raw control characters
    in strings; the validator here is not), else the JSON object of a ```json fence or between
    the first `{` and the last `}` (prose around it is what free-form models write), else the
    text itself, for the validator to refuse."""
    match = _TOOL_CALL.search(content)
    call = _object(match.group(1)) if match else None
    if call is not None and isinstance(call.get("arguments"), dict):
        return json.dumps(call["arguments"])
    fenced = _FENCED.search(content)
    braces = content[content.find("{"):content.rfind("}") + 1] if "{" in content else ""
    for text in (fenced.group(1) if fenced else "", braces):
        if text and _object(text) is not None:
            return text
    return content
