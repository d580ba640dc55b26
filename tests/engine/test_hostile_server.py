"""A hostile or broken model server cannot make a review claim it is complete, hang it, or crash
the CLI: answers that are not completions, trickled bytes, a rate-limited /tokenize."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from reviewbot.config import resolve
from reviewbot.diff import parse
from reviewbot.engine.build import make_engine
from tests.engine.test_orchestrator import make_diff
from tests.fake_openai import FakeOpenAI, Reply

GOOD = Reply(tool_args={"summary": "ok", "findings": []})


def engine_for(server: FakeOpenAI, **flags: object):
    # the finding pass alone: the verification pass has its own tests (test_candidates.py)
    return make_engine(resolve({"base_url": server.base_url, "max_output_tokens": 256,
                                "verify": False,
                                "retries": 0, **flags}, env={}))


@pytest.mark.parametrize("reply", [
    Reply(raw=b"<html>502 Bad Gateway</html>"),
    Reply(body={"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": []}),
    Reply(body={"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop", "message": None}]}),
    Reply(body=[1, 2, 3]),
], ids=["html-200", "no-choices", "null-message", "json-list"])
def test_an_answer_that_is_not_a_completion_leaves_the_review_incomplete(reply: Reply) -> None:
    with FakeOpenAI(lambda body, n: reply, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert not result.complete and result.stats.answers_unusable == 3
    assert len(server.requests) == 3


# The server trickles its answer for a minute; httpx's per-read timeouts alone would wait for all
# of it. That the bot hung up first is read on the server's side, which a loaded machine does not
# blur as it does a wall-clock bound (the CI's 2 cores once stretched 2 s to 35 s).
TRICKLED = Reply(tool_args={"summary": "ok", "findings": []}, trickle=0.2)


def test_a_trickling_server_is_cut_at_the_request_deadline() -> None:
    with FakeOpenAI(lambda body, n: TRICKLED, max_model_len=8000) as server:
        engine = engine_for(server, request_timeout=1.5)
        result = engine.review(parse(make_diff(files=1)))
        assert server.wait_abandoned()
    assert not result.complete
    assert "Timeout" in result.stats.errors[0]


def test_the_review_deadline_holds_whatever_the_server_does() -> None:
    with FakeOpenAI(lambda body, n: TRICKLED, max_model_len=8000) as server:
        engine = engine_for(server, request_timeout=60, review_timeout=2)
        result = engine.review(parse(make_diff(files=1)))
        assert server.wait_abandoned()
    assert not result.complete
    assert any("review_timeout" in e or "deadline" in e for e in result.stats.errors)


def test_tokenize_429_is_retried() -> None:
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=8000) as server:
        engine = engine_for(server)
        server.tokenize_429 = 3  # a balancer's rate limit, after the probe
        result = engine.review(parse(make_diff(files=2)))
    assert result.complete and server.tokenize_429 <= 0


def _cli(server: FakeOpenAI, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REVIEWBOT_", "CI_", "GIT"))}
    env["REVIEWBOT_MAX_OUTPUT_TOKENS"] = "256"
    return subprocess.run([sys.executable, "-m", "reviewbot", "review", "--no-progress",
                           "--base-url", server.base_url, *args],
                          input=make_diff(files=1).decode(), capture_output=True, text=True,
                          env=env,
                          timeout=120)


@pytest.mark.parametrize("status", [502, 429])
def test_cli_a_tokenize_that_starts_failing_costs_exact_counts_not_the_report(
        status: int, tmp_path: Path) -> None:
    """/tokenize answers the probe, then fails for good (a vLLM restart behind the balancer):
    the review goes on with a conservative estimate, every line reaches the model, the report
    is written in full and says so."""
    report = tmp_path / "gl-code-quality.json"
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=8000) as server:
        server.tokenize_429, server.tokenize_429_skip = 10**6, 1  # the probe gets through
        server.tokenize_status = status
        proc = _cli(server, "--diff", "-", "--output", "json", "--output-file", str(report))
        requests = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(report.read_text())["stats"]
    assert stats["complete"] and stats["changed_lines_sent"] == stats["changed_lines"] > 0
    assert requests >= 1 and f"HTTP {status}" in " ".join(stats["notes"])
    assert "Traceback" not in proc.stderr


def test_cli_a_tokenize_answer_without_count_falls_back_too() -> None:
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=8000) as server:
        server.tokenize_count = False
        proc = _cli(server, "--diff", "-", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    assert "without a usable count" in " ".join(json.loads(proc.stdout)["stats"]["notes"])


@pytest.mark.parametrize("output", ["json", "codequality", "sarif"])
def test_cli_a_server_that_fails_the_review_still_gets_its_report_written(
        output: str, tmp_path: Path) -> None:
    """The model list answers, then the server goes away: exit 3, one line on stderr, and the
    artifact is there, saying nothing was reviewed."""
    report = tmp_path / "report.json"
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=8000) as server:
        server.tokenize = False
        url = server.base_url
    proc = subprocess.run(
        [sys.executable, "-m", "reviewbot", "review", "--no-progress", "--base-url", url,
         "--diff", "-", "--output", output, "--output-file", str(report)],
        input=make_diff(files=1).decode(), capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")})
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().split("\n")) == 1
    data = json.loads(report.read_text())
    if output == "json":
        assert data["stats"]["complete"] is False and data["stats"]["errors"]


@pytest.mark.parametrize("output", ["text", "json", "sarif", "codequality", "markdown"])
def test_cli_an_unusable_answer_exits_3_in_every_format(output: str) -> None:
    with FakeOpenAI(lambda body, n: Reply(tool_args="{broken"), max_model_len=8000) as server:
        proc = _cli(server, "--diff", "-", "--output", output)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    if output == "json":
        assert json.loads(proc.stdout)["stats"]["complete"] is False


def test_a_password_in_base_url_is_never_shown() -> None:
    with FakeOpenAI(lambda body, n: Reply(status=500), max_model_len=8000) as server:
        url = server.base_url.replace("http://", "http://alice:hunter2@")
        outputs = []
        for output in ("text", "json", "markdown"):
            env = {k: v for k, v in os.environ.items() if not k.startswith("REVIEWBOT_")}
            proc = subprocess.run(
                [sys.executable, "-m", "reviewbot", "review", "--no-progress", "--diff", "-",
                 "--base-url", url, "--output", output],
                input=make_diff(files=1).decode(), capture_output=True, text=True, timeout=120,
                env={**env, "REVIEWBOT_MAX_OUTPUT_TOKENS": "256", "REVIEWBOT_RETRIES": "0"})
            outputs.append(proc.stdout + proc.stderr)
            assert proc.returncode == 3, proc.stderr
        down = subprocess.run(
            [sys.executable, "-m", "reviewbot", "review", "--no-progress", "--diff", "-",
             "--base-url", "http://alice:hunter2@127.0.0.1:9/v1"],
            input=make_diff(files=1).decode(), capture_output=True, text=True, timeout=120)
    assert down.returncode == 3 and "http://***@127.0.0.1:9" in down.stderr
    for text in outputs + [down.stderr]:
        assert "hunter2" not in text


SVG = "<path d=\"" + " ".join(f"M{i} {i}L{i + 1} {i * 7}" for i in range(1000)) + "\"/>"
CUT_DIFF = (f"diff --git a/logo.svg b/logo.svg\n--- a/logo.svg\n+++ b/logo.svg\n"
            f"@@ -1,3 +1,3 @@\n <svg>\n-<path/>\n+{SVG}\n </svg>\n")


@pytest.mark.parametrize("output", ["text", "json", "markdown", "sarif", "codequality"])
def test_a_line_cut_short_is_not_reported_as_100_percent(output: str) -> None:
    """An added line longer than a request is shown cut short: every output says so, and
    with fail_on_skipped the review is incomplete."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REVIEWBOT_", "CI_", "GIT"))}
    env["REVIEWBOT_MAX_OUTPUT_TOKENS"] = "256"
    argv = [sys.executable, "-m", "reviewbot", "review", "--no-progress", "--diff", "-",
            "--max-context", "3000", "--output", output]
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=3000) as server:
        proc = subprocess.run([*argv, "--base-url", server.base_url], input=CUT_DIFF,
                              capture_output=True, text=True, env=env, timeout=120)
        strict = subprocess.run([*argv, "--base-url", server.base_url], input=CUT_DIFF,
                                capture_output=True, text=True, timeout=120,
                                env={**env, "REVIEWBOT_FAIL_ON_SKIPPED": "true"})
    assert proc.returncode == 0, proc.stderr
    assert "cut short" in proc.stdout and "characters not reviewed" in proc.stdout
    if output == "text":
        assert "✔ Review complete" not in proc.stdout
    if output == "json":
        stats = json.loads(proc.stdout)["stats"]
        assert stats["changed_lines_cut"] == 1 and stats["chars_cut"] > 1000
    assert strict.returncode == 3, strict.stderr


def test_a_base_url_without_v1_gets_a_hint() -> None:
    with FakeOpenAI(lambda body, n: GOOD, max_model_len=8000) as server:
        root = server.base_url.removesuffix("/v1")
        proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--no-progress",
                               "--base-url", root, "--diff", "-"],
                              input=make_diff(files=1).decode(), capture_output=True, text=True,
                              timeout=60, env={k: v for k, v in os.environ.items()
                                               if not k.startswith("REVIEWBOT_")})
    assert proc.returncode == 3
    assert f"did you mean {root}/v1?" in proc.stderr, proc.stderr


class _Endless(BaseHTTPRequestHandler):
    """A model server whose answer never ends: a completion's opening, then 'a' for ever."""

    sent = 0

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # /v1/models: one model, so the review starts
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model",
                                                       "max_model_len": 8000}]}).encode()
        self.send_response(200 if self.path.endswith("/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.path.endswith("/chat/completions"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(1 << 40))
        self.end_headers()
        start = b'{"id": "x", "object": "chat.completion", "choices": [{"message": {"content": "'
        try:
            self.wfile.write(start)
            block = b"a" * 65536
            for _ in range(200_000):  # 13 GB at most: bounded, whatever the client does
                self.wfile.write(block)
                type(self).sent += len(block)
        except OSError:
            pass  # the client stopped reading and closed


def test_an_endless_answer_is_read_no_further_than_its_cap_and_is_unusable() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        engine = make_engine(resolve({"base_url": f"http://127.0.0.1:{server.server_port}/v1",
                                      "max_output_tokens": 256, "verify": False, "retries": 0,
                                      "request_timeout": 60}, env={}))
        result = engine.review(parse(make_diff(files=1)))
    finally:
        server.shutdown()
        server.server_close()
    # each of the three answers was cut at its cap (about 1 MB here), not read for a minute
    # (what the server could send is counted there, not timed: a loaded machine blurs time)
    assert not result.complete and result.stats.answers_unusable == 3
    assert _Endless.sent < 3 * 64 * 2**20


def test_an_endpoints_url_as_base_url_is_a_usage_error_naming_the_root() -> None:
    """`--base-url http://h/v1/chat/completions` suggested ".../chat/completions/v1" and
    exited 3."""
    proc = subprocess.run([sys.executable, "-m", "reviewbot", "review", "--no-progress",
                           "--base-url", "http://127.0.0.1:9/v1/chat/completions", "--diff",
                           "-"], input=make_diff(files=1).decode(), capture_output=True,
                          text=True, timeout=60,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith("REVIEWBOT_")})
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("give the server's API root, http://127.0.0.1:9/v1")
    assert len(proc.stderr.strip().splitlines()) == 1
