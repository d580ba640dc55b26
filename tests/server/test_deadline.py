"""The server side's bounded HTTP client: a trickled answer is cut at the client's limit, or at a
call's own shorter one, however slowly its bytes come (httpx alone times each read)."""

from __future__ import annotations

import httpx
import pytest

from reviewbot_server.deadline import bounded_client
from tests.fake_openai import FakeOpenAI, Reply

TRICKLED = Reply(tool_args={"ok": True}, trickle=0.2)  # a minute of bytes, 0.2 s apart
BODY = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}


def test_a_trickled_answer_is_cut_at_the_clients_limit() -> None:
    with FakeOpenAI(lambda body, attempt: TRICKLED) as fake, bounded_client(1.0) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{fake.base_url}/chat/completions", json=BODY)
        assert fake.wait_abandoned()


def test_a_calls_own_read_timeout_is_a_limit_on_the_whole_call() -> None:
    with FakeOpenAI(lambda body, attempt: TRICKLED) as fake, bounded_client(120.0) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{fake.base_url}/chat/completions", json=BODY, timeout=1.0)
        assert fake.wait_abandoned()  # long before the client's 120 s


def test_a_prompt_answer_is_read_whole() -> None:
    with FakeOpenAI(lambda body, attempt: Reply(tool_args={"ok": True})) as fake, \
            bounded_client(5.0) as client:
        answer = client.post(f"{fake.base_url}/chat/completions", json=BODY)
    assert answer.status_code == 200 and answer.json()["choices"]
