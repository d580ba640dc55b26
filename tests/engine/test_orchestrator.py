"""The orchestrator against a scripted OpenAI-compatible server: every failure mode, no crash."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.diff import parse
from reviewbot.engine.budget import ANSWER_MARGIN
from reviewbot.engine.build import make_engine
from tests.fake_openai import (
    FakeOpenAI,
    Reply,
    asked,
    request_tokens,
    row_of,
    row_ranges,
    user_text,
)


def make_diff(files: int = 3, hunks: int = 2, lines: int = 4) -> bytes:
    out = []
    for f in range(files):
        out.append(f"diff --git a/src/m{f}.py b/src/m{f}.py\n--- a/src/m{f}.py\n+++ b/src/m{f}.py\n")
        for h in range(hunks):
            start = 1 + h * 100
            half, rest = lines // 2, lines - 2 * (lines // 2)
            out.append(f"@@ -{start},{1 + half + rest} +{start},{1 + half + rest} @@ def f{h}():\n")
            out.append(f" ctx = {h}\n")
            out.extend(f"-    old_{f}_{h}_{i} = compute({i})\n" for i in range(lines // 2))
            out.extend(f"+    new_{f}_{h}_{i} = compute({i}, safe=True)\n" for i in range(lines // 2))
            out.extend(f" keep_{i}()\n" for i in range(lines - 2 * (lines // 2)))
    return "".join(out).encode()


def first_row(body: dict) -> int:
    return row_ranges(body)[0][0]


def finding(row: int, title: str = "Unchecked result", severity: str = "major") -> dict:
    return {"severity": severity, "category": "bug", "title": title, "body": "b", "row": row}


def good(body: dict, attempt: int) -> Reply:
    return Reply(tool_args={"summary": "looks risky", "findings": [finding(first_row(body))]})


def engine_for(server: FakeOpenAI, **flags: object):
    # the finding pass alone: the verification pass has its own tests (test_candidates.py)
    # the forced call, whose schema these tests read; the free JSON answer has its own below
    return make_engine(resolve({"base_url": server.base_url, "max_output_tokens": 256,
                                "verify": False, "findings_format": "tool",
                                "retries": 2, **flags}, env={}))


def test_findings_are_anchored_fingerprinted_and_complete() -> None:
    changes = parse(make_diff())
    with FakeOpenAI(good, max_model_len=4096) as server:
        result = engine_for(server).review(changes)
    stats = result.stats
    assert stats.complete and not stats.errors
    assert stats.changed_lines_sent == stats.changed_lines == changes.changed_lines
    assert result.findings, "every chunk reported one finding"
    for f in result.findings:
        file = changes.file(f.path)
        assert file is not None and (f.side, f.line) in file.commentable
        assert len(f.fingerprint) == 16
    assert len({f.fingerprint for f in result.findings}) == len(result.findings)


def test_no_request_exceeds_context_and_shared_prefix_is_stable() -> None:
    changes = parse(make_diff(files=30, hunks=4, lines=10))
    with FakeOpenAI(good, max_model_len=3000) as server:
        result = engine_for(server).review(changes)
        bodies = server.requests
    assert result.stats.complete
    assert len(bodies) > 3
    for body in bodies:
        assert request_tokens(body) + body["max_tokens"] <= 3000
    systems = {b["messages"][0]["content"] for b in bodies}
    assert len(systems) == 1, "system prompt must be byte-identical across chunks"
    # the tool text is identical up to the per-chunk anchors, which come last
    texts = [json.dumps(b["tools"]) for b in bodies]
    prefix = texts[0][: texts[0].index('"row"')]
    assert all(t.startswith(prefix) for t in texts)


def test_anchor_schema_only_admits_rows_shown_in_the_chunk() -> None:
    changes = parse(make_diff(files=2, hunks=2))
    with FakeOpenAI(good, max_model_len=8000) as server:
        engine_for(server).review(changes)
        body = server.requests[0]
    shown = {int(m) for m in re.findall(r"^[-+](\d+) ", body["messages"][1]["content"], re.MULTILINE)}
    admitted = {r for lo, hi in row_ranges(body) for r in range(lo, hi + 1)}
    # rows on every added line and on the first line of each removed run, none on context
    labelled = sum(1 for f in changes.files for h in f.hunks for i, ln in enumerate(h.lines)
                   if ln.kind == "+" or (ln.kind == "-" and (i == 0 or h.lines[i - 1].kind != "-")))
    assert admitted == shown and len(shown) == labelled


def test_every_row_maps_to_a_commentable_position() -> None:
    changes = parse(make_diff(files=2, hunks=2))

    window = 0  # the findings cap is 8 for a small chunk: each review names 8 rows of them

    def every_row(body: dict, n: int) -> Reply:
        rows = [r for lo, hi in row_ranges(body) for r in range(lo, hi + 1)]
        return Reply(tool_args={"summary": "", "findings": [
            finding(r, f"t{r}") for r in rows[window:window + 8]]})

    found: list = []
    with FakeOpenAI(every_row, max_model_len=8000) as server:
        for window in (0, 8, 16):
            result = engine_for(server, max_findings_per_chunk=100).review(changes)
            assert result.stats.tool_calls_invalid == 0
            found += result.findings
    result = replace(result, findings=found)
    assert len(result.findings) == sum(1 for f in changes.files for h in f.hunks
                                       for i, ln in enumerate(h.lines) if ln.kind == "+" or (
                                           ln.kind == "-" and (i == 0 or h.lines[i - 1].kind != "-")))
    for f in result.findings:
        assert (f.side, f.line) in changes.file(f.path).commentable


@pytest.mark.parametrize("reply", [
    Reply(tool_args={"summary": "", "findings": [{"title": "no row"}]}),
    Reply(tool_args={"summary": "", "findings": [finding("3")]}),
], ids=["missing-field", "row-not-a-number"])
def test_invalid_findings_in_a_usable_answer_are_dropped_and_counted(reply: Reply) -> None:
    with FakeOpenAI(lambda body, n: reply, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert result.findings == []
    assert result.stats.complete, "a valid call with a bad item still reviewed the chunk"
    assert result.stats.tool_calls_invalid >= 1 and len(server.requests) == 1


UNUSABLE = [
    Reply(tool_args="{not json"),
    Reply(tool_args={"findings": "nope"}),
    Reply(tool_args={"summary": "x", "findings": []}, tool_name="delete_repo"),
    Reply(tool_args=None, content=None),
    Reply(tool_args='{"summary": "cut', finish_reason="length"),
    Reply(tool_args={"summary": "", "findings": []}, finish_reason="length"),
    Reply(tool_args="[" * 200_000 + "]" * 200_000),
]
UNUSABLE_IDS = ["bad-json", "wrong-type", "unknown-tool", "no-call", "truncated",
                "length-with-call", "nested-200000"]


@pytest.mark.parametrize("reply", UNUSABLE, ids=UNUSABLE_IDS)
def test_an_unusable_answer_is_retried_then_the_review_is_incomplete(reply: Reply) -> None:
    with FakeOpenAI(lambda body, n: reply, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert not result.complete and result.stats.changed_lines_sent == 0
    assert len(server.requests) == 3 and result.stats.answers_unusable == 3
    assert "no usable answer" in result.stats.errors[0]


@pytest.mark.parametrize("reply", UNUSABLE[:3], ids=UNUSABLE_IDS[:3])
def test_an_unusable_answer_then_a_good_one_completes(reply: Reply) -> None:
    good = Reply(tool_args={"summary": "ok", "findings": []})
    with FakeOpenAI(lambda body, n: reply if n == 1 else good, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert result.complete and len(server.requests) == 2 and result.stats.answers_unusable == 1



def test_an_answer_cut_at_max_tokens_is_asked_again_with_a_frequency_penalty() -> None:
    """At temperature 0 the same request repeats the same runaway answer: the retry differs."""
    def loops_unless_penalised(body: dict, n: int) -> Reply:
        if body.get("frequency_penalty", 0) > 0:
            return Reply(tool_args={"summary": "ok", "findings": []})
        return Reply(tool_args='{"findings": [{"body": "' + "again " * 300,
                     finish_reason="length")

    with FakeOpenAI(loops_unless_penalised, max_model_len=8000) as server:
        result = engine_for(server, temperature=0).review(parse(make_diff(files=1)))
    assert result.complete and result.stats.answers_unusable == 1
    assert [r.get("frequency_penalty") for r in server.requests] == [None, 0.5]


def test_a_thinking_model_is_asked_not_to_think() -> None:
    """Qwen3.x thinks by default: its reasoning would take the answer's whole budget (here, as
    a server that thinks unless told not to does, the answer is cut before any call)."""
    def thinks_unless_told(body: dict, n: int) -> Reply:
        if (body.get("chat_template_kwargs") or {}).get("enable_thinking") is False:
            return Reply(tool_args={"summary": "ok", "findings": []})
        return Reply(content="<think>Let me consider each line" + " ..." * 500,
                     finish_reason="length")

    with FakeOpenAI(thinks_unless_told, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert result.complete and result.stats.answers_unusable == 0, result.stats.errors
    assert all(r["chat_template_kwargs"] == {"enable_thinking": False} for r in server.requests)

def test_out_of_range_line_is_reanchored_to_nearest_shown_line() -> None:
    def script(body: dict, n: int) -> Reply:
        return Reply(tool_args={"summary": "", "findings": [finding(10_000)]})

    changes = parse(make_diff(files=1))
    with FakeOpenAI(script, max_model_len=8000) as server:
        result = engine_for(server).review(changes)
    assert result.stats.findings_reanchored == 1
    f = result.findings[0]
    assert (f.side, f.line) in changes.file(f.path).commentable


def test_429_and_500_are_retried() -> None:
    def script(body: dict, n: int) -> Reply:
        if n == 1:
            return Reply(status=429, headers={"Retry-After": "0"})
        if n == 2:
            return Reply(status=500)
        return good(body, n)

    with FakeOpenAI(script, max_model_len=8000) as server:
        result = engine_for(server, retries=3).review(parse(make_diff(files=1)))
    assert result.stats.complete
    assert len(result.findings) == 1


def test_persistent_errors_make_an_incomplete_review() -> None:
    with FakeOpenAI(lambda b, n: Reply(status=503), max_model_len=8000) as server:
        result = engine_for(server, retries=1).review(parse(make_diff(files=1)))
    assert not result.complete
    assert result.stats.errors and "503" in result.stats.errors[0]
    assert result.stats.changed_lines_sent == 0
    assert result.summary.startswith("INCOMPLETE")


def test_timeout_makes_an_incomplete_review() -> None:
    with FakeOpenAI(lambda b, n: Reply(delay=1.5, tool_args={"summary": "", "findings": []}),
                    max_model_len=8000) as server:
        result = engine_for(server, retries=0, request_timeout=0.3).review(parse(make_diff(files=1)))
    assert not result.complete
    assert "Timeout" in result.stats.errors[0]


def test_the_first_part_is_sent_while_later_parts_are_still_counted() -> None:
    """A request goes out as soon as its chunk's exact count is in: with counting slowed down,
    answers come back before the last chunk is counted, and coverage stays 100%."""
    with FakeOpenAI(good, max_model_len=2600) as server:
        server.count_delay = 0.3
        engine = engine_for(server)
        result = engine.review(parse(make_diff(files=30, hunks=3, lines=8)))
        events = list(server.events)
    assert result.stats.complete, result.stats.errors
    assert result.stats.changed_lines_sent == result.stats.changed_lines
    chats = [t for kind, t in events if kind == "chat"]
    counts = [t for kind, t in events if kind == "count"]
    assert result.stats.chunks == len(chats) >= 8
    assert sum(t > chats[0] for t in counts) >= 2, "the first part waited for every count"
    users = [b["messages"][-1]["content"] for b in server.requests]
    assert all(re.search(r"^Review part \d+ of this change \(", u, re.MULTILINE) for u in users)
    assert sorted(int(re.search(r"Review part (\d+)", u).group(1)) for u in users) \
        == list(range(1, len(users) + 1))


def test_a_change_in_one_request_is_the_whole_change() -> None:
    with FakeOpenAI(good, max_model_len=8000) as server:
        engine_for(server).review(parse(make_diff(files=2)))
    (body,) = server.requests
    assert body["messages"][-1]["content"].startswith("Review this change (2 files).")


def test_a_deadline_reached_while_parts_are_counted_sends_no_more() -> None:
    with FakeOpenAI(good, max_model_len=2600) as server:
        server.count_delay = 0.4
        started = time.monotonic()
        result = engine_for(server, review_timeout=2).review(
            parse(make_diff(files=30, hunks=3, lines=8)))
        chats = [t for kind, t in server.events if kind == "chat"]
    assert not result.complete
    assert any("before every part of the change was sent" in e for e in result.stats.errors)
    assert result.stats.changed_lines_sent < result.stats.changed_lines
    assert all(t < started + 2.2 for t in chats), "a part went out after the deadline"


def test_context_length_400_resplits_the_chunk() -> None:
    # /v1/models advertises more than the server accepts: the bot packs big chunks, the server
    # refuses them, and the bot must re-split instead of failing the review.
    class Liar(FakeOpenAI):
        pass

    server = Liar(good, max_model_len=2600, tokenize=False)
    with server:
        engine = engine_for(server, max_context=9000)
        engine.context = 9000
        result = engine.review(parse(make_diff(files=12, hunks=3, lines=8)))
    assert result.stats.complete, result.stats.errors
    assert result.stats.requests > result.stats.chunks - 1
    statuses = [request_tokens(b) + b["max_tokens"] for b in server.requests]
    assert any(s > 2600 for s in statuses), "some requests were refused and re-split"


def test_servers_without_tokenize_fall_back_to_an_estimate() -> None:
    with FakeOpenAI(good, max_model_len=4000, tokenize=False) as server:
        engine = engine_for(server)
        result = engine.review(parse(make_diff(files=5)))
    assert engine.counter.name == "estimate"
    assert result.stats.complete


def test_skipped_files_are_reported_with_reasons() -> None:
    raw = make_diff(files=1) + (
        b"diff --git a/package-lock.json b/package-lock.json\n--- a/package-lock.json\n"
        b"+++ b/package-lock.json\n@@ -1 +1 @@\n-a\n+b\n"
        b"diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n"
    )
    with FakeOpenAI(good, max_model_len=8000) as server:
        result = engine_for(server, exclude=("docs/*",)).review(parse(raw))
    reasons = {s.path: s.reason for s in result.stats.files_skipped}
    assert reasons == {"package-lock.json": "lock file", "logo.png": "binary file"}
    assert result.stats.files_total == 3 and result.stats.files_reviewed == 1


def test_an_unparsed_hermes_call_in_content_is_still_read() -> None:
    def script(body: dict, n: int) -> Reply:
        args = {"summary": "s\x06", "findings": [finding(first_row(body))]}
        raw = json.dumps({"name": "report_findings", "arguments": args}).replace("\\u0006", "\x06")
        return Reply(tool_args=None, content=f"<tool_call>{raw}</tool_call>", finish_reason="stop")

    with FakeOpenAI(script, max_model_len=8000) as server:
        result = engine_for(server).review(parse(make_diff(files=1)))
    assert len(result.findings) == 1 and result.stats.tool_calls_invalid == 0


@pytest.mark.parametrize("wrap", [
    "{}",
    "Here is my review.\n```json\n{}\n```\nThat is all.",
    "The change looks risky: {} (see above)",
])
def test_findings_format_json_reads_a_free_answer_and_sends_no_tools(wrap: str) -> None:
    def script(body: dict, n: int) -> Reply:
        assert "tools" not in body and "tool_choice" not in body
        args = {"findings": [finding(row_of(body, "new_0_0_0"))], "summary": "s"}
        return Reply(tool_args=None, content=wrap.format(json.dumps(args)), finish_reason="stop")

    with FakeOpenAI(script, max_model_len=8000) as server:
        result = engine_for(server, findings_format="json").review(parse(make_diff(files=1)))
        prompt = user_text(server.requests[0])
    assert result.complete and result.stats.tool_calls_invalid == 0
    assert [(f.path, f.line) for f in result.findings] == [("src/m0.py", 2)]
    assert "Answer with one JSON object" in prompt and "report_findings" not in prompt


def test_findings_format_json_verifies_through_a_guided_answer_without_tools() -> None:
    def script(body: dict, n: int) -> Reply:
        assert "tools" not in body and "tool_choice" not in body  # the prefix stays shared
        if asked(body) == "verify_findings":
            return Reply(tool_name="verify_findings", tool_args={"verdicts": {
                "1": {"reason": "wrong", "keep": False, "severity": "minor",
                      "confidence": 0.9}}})
        args = {"findings": [finding(row_of(body, "new_0_0_0"))], "summary": "s"}
        return Reply(tool_args=None, content=json.dumps(args), finish_reason="stop")

    with FakeOpenAI(script, max_model_len=8000) as server:
        result = engine_for(server, findings_format="json", verify=True).review(
            parse(make_diff(files=1)))
    assert result.complete and not result.findings and result.stats.verify_requests == 1


def test_findings_format_json_counts_prose_without_json_as_unusable() -> None:
    prose = Reply(tool_args=None, content="The change looks fine to me.", finish_reason="stop")
    with FakeOpenAI(lambda body, n: prose, max_model_len=8000) as server:
        result = engine_for(server, findings_format="json").review(parse(make_diff(files=1)))
    assert not result.complete and result.stats.answers_unusable == 3


def test_an_answer_with_thousands_of_findings_keeps_at_most_the_cap() -> None:
    many = Reply(tool_args={"summary": "", "findings": [finding(1)] * 3_000})  # ~0.6 MB
    with FakeOpenAI(lambda body, n: many, max_model_len=8000) as server:
        result = engine_for(server, max_findings_per_chunk=8).review(parse(make_diff(files=1)))
    assert result.complete and result.stats.tool_calls_invalid >= 3_000 - 8
    assert len(result.findings) <= 8


def test_an_answer_longer_than_its_max_tokens_allow_is_not_read_whole() -> None:
    """10,000 findings (2 MB) cannot come from an answer of a few thousand tokens: it is cut
    at its byte cap (reviewbot.engine.llm.answer_bytes), unusable, and asked again."""
    many = Reply(tool_args={"summary": "", "findings": [finding(1)] * 10_000})
    with FakeOpenAI(lambda body, n: many, max_model_len=8000) as server:
        result = engine_for(server, max_findings_per_chunk=8).review(parse(make_diff(files=1)))
    assert not result.complete and result.stats.answers_unusable == 3


def test_a_change_beyond_max_diff_mb_is_refused_before_any_request() -> None:
    from reviewbot.errors import ChangeTooLarge

    changes = parse(make_diff(files=200, hunks=2, lines=40))
    with FakeOpenAI(good, max_model_len=65536) as server:
        engine = engine_for(server, max_diff_mb=0.05)
        asked = len(server.requests)
        with pytest.raises(ChangeTooLarge, match="max_diff_mb") as info:
            engine.review(changes)
        assert len(server.requests) == asked  # refused at once: nothing was sent
    assert info.value.exit_code == 2 and "\n" not in str(info.value)


def test_concurrency_follows_the_servers_kv_cache() -> None:
    from reviewbot.engine.build import MAX_CONCURRENCY, concurrency_for

    auto = resolve({"concurrency": 0}, env={})
    # the H200 of docs/performance.md: 731,920 KV tokens hold 11 full 64K chunks, plus one queued
    assert concurrency_for(auto, 731_920, 65536) == 12
    assert concurrency_for(auto, 731_920, 32768 + 2048) == 22
    assert concurrency_for(auto, 50_000, 65536) == 2  # a small card: one running, one queued
    assert concurrency_for(auto, 10**9, 4096) == MAX_CONCURRENCY == 64  # bounded
    assert concurrency_for(auto, None, 65536) == 8  # the server does not say
    assert concurrency_for(resolve({"concurrency": 5}, env={}), 731_920, 65536) == 5
    with FakeOpenAI(good) as server:  # no /metrics: the fallback
        assert engine_for(server).settings.concurrency == 8


# 731,920 KV tokens hold 29 units of the default 24K prompt + engine_for's 256-token answer,
# plus one queued
@pytest.mark.parametrize("metrics, expected", [
    (b'vllm:cache_config_info{block_size="16",kv_cache_size_tokens="731920"} 1.0\n', 30),
    (b'vllm:cache_config_info{block_size="16",num_gpu_blocks="45745"} 1.0\n', 30),
    # hostile or broken answers: the fallback, never a crash or a runaway pool
    (b'vllm:cache_config_info{kv_cache_size_tokens="99999999999999999999999"} 1.0\n', 8),
    (b'vllm:cache_config_info{kv_cache_size_tokens="-5"} 1.0\n', 8),
    ('vllm:cache_config_info{kv_cache_size_tokens="٧٣١٩٢٠"} 1.0\n'.encode(), 8),
    (b'vllm:cache_config_info{kv_cache_size_tokens="0"} 1.0\n', 8),
    (b"x" * (3 << 20) + b'\nvllm:cache_config_info{kv_cache_size_tokens="731920"} 1.0\n', 8),
    (b"\xff\xfe not metrics at all", 8),
])
def test_a_servers_metrics_answer_is_read_as_untrusted(metrics: bytes, expected: int) -> None:
    with FakeOpenAI(good, max_model_len=65536) as server:
        server.metrics = metrics
        assert engine_for(server).settings.concurrency == expected


def _word_tokenizer(path: Path, split: str) -> str:
    """A tokenizer.json that counts as tests/fake_openai.py does (`\\w+|[^\\w\\s]`), or, with
    another `split`, one that does not."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(split), behavior="isolated")])
    tok.save(str(path))
    return str(path)


@pytest.mark.parametrize("split, local", [(r"\w+|[^\w\s]", True), (r"\w+|[^\w\s]+", False)])
def test_a_tokenizer_json_that_counts_as_the_server_does_counts_the_texts(
        tmp_path: Path, split: str, local: bool) -> None:
    """With the served model's tokenizer.json the diff's pieces are counted here, not by
    /tokenize, and the chunks are the same; one that counts otherwise is not used for them."""
    diff_bytes = make_diff(files=20, hunks=3, lines=8)
    prompts, text_calls = [], []
    for tokenizer in (None, _word_tokenizer(tmp_path / "tokenizer.json", split)):
        with FakeOpenAI(good, max_model_len=2600) as server:
            flags = {"tokenizer": tokenizer} if tokenizer else {}
            result = engine_for(server, **flags).review(parse(diff_bytes))
            counts = sum(kind == "count" for kind, _ in server.events)
            text_calls.append(server.tokenize_calls - counts)
        assert result.stats.complete, result.stats.errors
        prompts.append(sorted(b["messages"][-1]["content"] for b in server.requests))
    assert prompts[0] == prompts[1] and len(prompts[0]) >= 3
    # with it: the probe and the comparison of three texts only
    assert (text_calls[1] <= 12) is local and text_calls[0] > 50, text_calls


def test_answers_held_at_what_they_came_to_let_more_requests_out_at_once() -> None:
    """A chunk's request holds its prompt and its answer of the process's budget (the server's
    KV cache). Answers of 17 tokens, against a room of 2,048: once they come back, several
    requests are out at once where their whole rooms would let one go at a time."""
    lock, out, peak = threading.Lock(), [0], [0]

    def slow(body: dict, attempt: int) -> Reply:
        with lock:
            out[0] += 1
            peak[0] = max(peak[0], out[0])
        time.sleep(0.2)
        with lock:
            out[0] -= 1
        return Reply(tool_args={"summary": "fine", "findings": []})

    changes = parse(make_diff(files=4, hunks=1, lines=30))
    with FakeOpenAI(slow, max_model_len=8192) as server:
        server.metrics = b'vllm:cache_config_info{kv_cache_size_tokens="1200"} 1.0\n'
        engine = engine_for(server, max_output_tokens=2048, chunk_tokens=1400, concurrency=8)
        assert engine.budget is not None and engine.budget.capacity == 1200
        result = engine.review(changes)
        holds = [engine._tokens(c) for c in engine.fitting.chunks(changes, Context())]
    assert result.stats.complete and len(holds) >= 6, result.stats.errors
    assert min(prompt + room for prompt, room in holds) > 1200  # whole: one at a time
    expected = engine.budget.answers.expected(2048)
    assert expected == int(17 * ANSWER_MARGIN)
    assert max(prompt + expected for prompt, _ in holds) <= 1200 // 4 and peak[0] >= 4, peak
    assert engine.budget.out == 0


@pytest.mark.parametrize("completion", [10**15, -(10**15), "many"])
def test_a_hostile_usage_count_never_stretches_a_hold_past_the_requests_room(
        completion: object) -> None:
    """The answer sizes the budget learns are the server's word: a count past any room, below
    zero or not a number leaves every hold between the request's prompt and its whole room,
    and the review completes (a count that is no number once ended it with a ValueError)."""
    def lying(body: dict, attempt: int) -> Reply:
        args = json.dumps({"summary": "fine", "findings": []})
        return Reply(body={
            "id": f"c{attempt}", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "t", "type": "function",
                    "function": {"name": "report_findings", "arguments": args}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": completion,
                      "total_tokens": 10}})

    changes = parse(make_diff(files=2, hunks=1, lines=10))
    with FakeOpenAI(lying, max_model_len=8192) as server:
        server.metrics = b'vllm:cache_config_info{kv_cache_size_tokens="100000"} 1.0\n'
        engine = engine_for(server, max_output_tokens=2048)
        result = engine.review(changes)
    assert engine.budget is not None and engine.budget.out == 0
    for room in (1, 2048, 8192):
        assert 1 <= engine.budget.answers.expected(room) <= room
    assert result.stats.complete, result.stats.errors
    assert result.stats.usage.completion_tokens >= 0


def test_the_summary_names_head_files_the_forge_could_not_give() -> None:
    """Context the review asked for and did not get is said where the team looks."""
    failing = {f"src/m{f}.py" for f in range(3)}

    class Files:
        def __call__(self, path: str) -> str | None:
            return None

        def unread(self) -> list[str]:
            return sorted(failing)

    with FakeOpenAI(good, max_model_len=4096) as server:
        result = engine_for(server).review(parse(make_diff()), Context(files=Files()))
    assert "the code around 3 file(s) could not be read from the forge (src/m0.py, src/m1.py, " \
           "src/m2.py)" in result.summary
    assert any("could not be read from the forge" in n for n in result.stats.notes)


def test_a_hostile_unread_file_name_is_inert_in_the_forge_summary_and_the_terminal() -> None:
    """The unread names come from the diff (the change's author writes them): in the summary
    note they can neither render nor ping, on the terminal they cannot drive it."""
    from markdown_it import MarkdownIt

    from reviewbot.modeltext import prose
    from reviewbot.report import text

    hostile = ["<img src=x onerror=alert(1)>.py", "@all [click](http://evil.example).py",
               "clear\x1b[2J.py"]

    class Files:
        def __call__(self, path: str) -> str | None:
            return None

        def unread(self) -> list[str]:
            return hostile

    with FakeOpenAI(good, max_model_len=4096) as server:
        result = engine_for(server).review(parse(make_diff()), Context(files=Files()))
    assert "3 file(s) could not be read from the forge" in result.summary
    note = prose(result.summary)
    tokens = [t for block in MarkdownIt("commonmark", {"html": True}).parse(note)
              for t in [block, *(block.children or [])]]
    assert not [t.type for t in tokens if t.type in ("html_inline", "html_block", "link_open",
                                                     "image")]
    assert "@all" not in note  # no mention that pings
    shown = text.render(result)
    assert "\x1b[2J" not in shown and "could not be read from the forge" in shown
