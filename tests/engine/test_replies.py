"""A server's answer read (reviewbot.engine.replies), from plain objects shaped like the openai
client's: calls however the server gave them, counts that lie taken as 0, no choices refused."""

from __future__ import annotations

import json
from types import SimpleNamespace as Obj

import pytest

from reviewbot.engine.replies import read_reply
from reviewbot.errors import BadAnswer

ARGS = {"summary": "s", "findings": []}


def _answer(content: object = None, calls: list[object] | None = None, finish: str = "stop",
            usage: object = None) -> Obj:
    message = Obj(content=content, tool_calls=calls)
    return Obj(choices=[Obj(message=message, finish_reason=finish)], usage=usage)


def test_a_parsed_tool_call_and_its_usage() -> None:
    call = Obj(type="function", function=Obj(name="report_findings", arguments=json.dumps(ARGS)))
    usage = Obj(prompt_tokens=900, completion_tokens=40,
                prompt_tokens_details=Obj(cached_tokens=512))
    reply = read_reply(_answer(calls=[call], usage=usage), "report_findings")
    assert reply.calls == [("report_findings", json.dumps(ARGS))] and not reply.truncated
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens,
            reply.usage.completion_tokens) == (900, 512, 40)


@pytest.mark.parametrize("content", [
    f'<tool_call>\n{{"name": "report_findings", "arguments": {json.dumps(ARGS)}}}\n</tool_call>',
    f"Here you go:\n```json\n{json.dumps(ARGS)}\n```\nDone.",
    f"I found nothing. {json.dumps(ARGS)} That is all.",
])
def test_a_call_the_server_left_in_the_words_is_read_from_them(content: str) -> None:
    (name, arguments), = read_reply(_answer(content), "report_findings").calls
    assert name == "report_findings" and json.loads(arguments) == ARGS


def test_words_without_json_go_to_the_validator_and_a_cut_answer_says_so() -> None:
    sample = read_reply(_answer("no findings here", finish="length"), "report_findings").samples[0]
    assert sample.calls == [("report_findings", "no findings here")] and sample.truncated
    assert sample.text == "no findings here"


@pytest.mark.parametrize("lie", [-5, True, 1.5, "900", None])
def test_a_token_count_that_is_no_whole_number_counts_as_zero(lie: object) -> None:
    reply = read_reply(_answer("x", usage=Obj(prompt_tokens=lie, completion_tokens=lie)), "t")
    assert reply.usage.prompt_tokens == reply.usage.completion_tokens == 0


@pytest.mark.parametrize("response", [Obj(choices=[]), Obj(choices=None), Obj(),
                                      Obj(choices=[Obj(message=None)])])
def test_an_answer_without_choices_or_message_is_a_bad_answer(response: Obj) -> None:
    with pytest.raises(BadAnswer):
        read_reply(response, "t")
