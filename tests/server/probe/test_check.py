"""`reviewbot server check` against the real vLLM CPU server (tiny random model) and an
unreachable URL."""

from __future__ import annotations

import re
import socket
from typing import Any

import pytest

from reviewbot.cli import main
from reviewbot_server.deadline import bounded_client
from reviewbot_server.probe.check import Server, check_tool_auto, check_tool_forced
from reviewbot_server.supervise.canary import warm_up
from tests.fake_openai import FakeOpenAI, Reply

CHECKS = ("reachable", "model served", "context", "tokenize", "latency", "tool call (forced)",
          "tool call (auto)")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(["server", "check", *args])
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out + out.err


def status_of(output: str) -> dict[str, str]:
    """{check name: status} from lines like `PASS  reachable   GET /health → 200`."""
    found = (re.match(r"(PASS|WARN|FAIL)  (\S.*?)(?:\s{2,}|$)", line)
             for line in output.splitlines())
    return {m.group(2): m.group(1) for m in found if m}


@pytest.mark.vllm
def test_all_checks_pass(vllm_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--base-url", vllm_server.base_url, "--model", vllm_server.model,
                     "--min-context", str(vllm_server.max_model_len),
                     "--api-key", "sk-never-printed-42"], capsys)
    statuses = status_of(out)
    assert code == 0, out
    assert set(statuses) == set(CHECKS), out
    assert all(statuses[name] == "PASS" for name in CHECKS[:5]), out
    # a random-weight model answers tool calls with noise (truncated or non-JSON arguments,
    # text instead of a call under auto): WARN, never FAIL
    assert statuses["tool call (forced)"] in ("PASS", "WARN"), out
    assert statuses["tool call (auto)"] in ("PASS", "WARN"), out
    assert "sk-never-printed-42" not in out


@pytest.mark.vllm
def test_root_url_and_first_model(vllm_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--base-url", vllm_server.root_url,
                     "--min-context", "1024"], capsys)
    assert code == 0 and vllm_server.model in out, out


@pytest.mark.vllm
def test_context_below_budget_fails(vllm_server: Any,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--base-url", vllm_server.base_url,
                     "--min-context", str(vllm_server.max_model_len + 1)], capsys)
    assert code == 1 and status_of(out)["context"] == "FAIL", out


@pytest.mark.vllm
def test_unknown_model_fails(vllm_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--base-url", vllm_server.base_url, "--model", "no-such-model"], capsys)
    assert code == 1 and "'no-such-model' is not served" in out, out


def test_unreachable_url_fails(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code, out = run(["--base-url", f"http://127.0.0.1:{port}/v1", "--timeout", "5"], capsys)
    assert code == 1 and status_of(out) == {"reachable": "FAIL"}, out


def test_bad_url_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(["--base-url", "localhost:8000"], capsys)
    assert code == 2 and "expected http(s)://" in out


def _server(fake: FakeOpenAI) -> Server:
    return Server(fake.base_url, fake.base_url.removesuffix("/v1"), None, 10.0, model="fake")


@pytest.mark.parametrize("reply, status", [
    (Reply(tool_name="report_finding", tool_args={"line": 2, "message": "= vs =="}), "PASS"),
    (Reply(tool_name="report_finding", tool_args="): 30 su"), "WARN"),
    (Reply(content="no tools here", finish_reason="stop"), "FAIL"),
    (Reply(status=400, error="tool_choice not supported"), "FAIL"),
])
def test_forced_tool_call_outcomes(reply: Reply, status: str) -> None:
    with FakeOpenAI(lambda body, attempt: reply) as fake:
        result = check_tool_forced(_server(fake))
        assert result.status == status, result
        sent = fake.requests[0]
        assert sent["tool_choice"]["function"]["name"] == "report_finding"
        assert sent["max_tokens"] <= 256  # bounded: a random model pads until the cap


def test_forced_tool_call_truncated_every_time_is_a_warning() -> None:
    truncated = Reply(content="<tool_call>{   ", finish_reason="length")
    with FakeOpenAI(lambda body, attempt: truncated) as fake:
        result = check_tool_forced(_server(fake))
        assert result.status == "WARN" and len(fake.requests) == 3, result


def test_auto_tool_choice_rejected_names_the_flags() -> None:
    rejected = Reply(status=400, error='"auto" tool choice requires --enable-auto-tool-choice')
    with FakeOpenAI(lambda body, attempt: rejected) as fake:
        result = check_tool_auto(_server(fake))
        assert result.status == "FAIL" and "--enable-auto-tool-choice" in result.detail


def test_a_server_that_trickles_its_answer_fails_within_the_timeout() -> None:
    """httpx's timeouts are per read: one byte every 0.2 s never tripped them."""
    slow = Reply(tool_name="report_finding", tool_args={"line": 2, "message": "m"}, trickle=0.2)
    with FakeOpenAI(lambda body, attempt: slow) as fake:
        server = Server(fake.base_url, fake.base_url.removesuffix("/v1"), None, 1.5, model="fake")
        result = check_tool_forced(server)
        # the probe hung up on every try, read on the server's side (a wall clock is blurred
        # by a loaded machine; without the deadline each try would wait out the minute)
        assert fake.wait_abandoned(len(fake.requests))
    assert result.status == "FAIL", result


def test_the_supervisors_probes_end_by_their_deadline_on_a_trickling_server() -> None:
    slow = Reply(tool_args={"ok": True}, trickle=0.2)
    with FakeOpenAI(lambda body, attempt: slow) as fake, bounded_client(15.0) as client:
        took = warm_up(client, fake.base_url.removesuffix("/v1"), "fake", (64,), 4096, 1.5)
        assert fake.wait_abandoned()  # cut at the call's 1.5 s, not the client's 15
    assert took == {"64": None}, took
