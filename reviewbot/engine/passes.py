"""The passes: a chunk's finding pass (in the mode findings_format names), its verification,
and eval's judge, all through one attempts loop (reviewbot.engine.attempts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from reviewbot.choices import FindingsFormat
from reviewbot.context import Context
from reviewbot.diff import ChangeSet
from reviewbot.engine import answers, summaries, tools
from reviewbot.engine.attempts import Asked, Attempted, ChunkAnswer, attempts
from reviewbot.engine.candidates import agree, apply_verdicts
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.messages import (
    JUDGE_TOKENS,
    REASONING_TOKENS,
    REPLY_TOKENS,
    Anchor,
    Messages,
    Requests,
    Tools,
)
from reviewbot.engine.replies import Reply
from reviewbot.engine.restatement import drop_restated
from reviewbot.engine.routing import NO_ROUTE, Route
from reviewbot.errors import BadAnswer, ContextTooLong, RequestFailed
from reviewbot.result import Usage

T = TypeVar("T")
RETRY_PENALTY = 0.5  # frequency_penalty of a finding request asked again after an unusable one


@dataclass
class Passes:
    requests: Requests
    client: ModelClient
    model: str

    def _call(self, messages: Messages, tool_list: Tools, name: str, max_tokens: int,
              route: Route, n: int = 1, temperature: float | None = None,
              again: list[bool] | None = None, schema: dict[str, Any] | None = None,
              free: bool = False) -> Callable[[], Reply]:
        """One request; once `again` holds True (an answer came back unusable: cut at its
        max_tokens, or not the JSON asked for), with a frequency penalty: at a low temperature
        the same request repeats the same answer (a small model looping inside a string)."""
        temperature = self.requests.settings.temperature if temperature is None else temperature
        return lambda: self.client.call_tool(
            self.model, messages, tool_list, name, max_tokens, temperature, n=n, route=route,
            frequency_penalty=RETRY_PENALTY if again and again[0] else 0.0, schema=schema,
            free=free)

    @staticmethod
    def _until_usable(call: Callable[[], Reply], deadline: float, answer: ChunkAnswer,
                      asked: Asked, again: list[bool],
                      read: Callable[[Reply], tuple[list[T], str]]) -> list[T]:
        """Ask until `read` finds something usable in a reply (up to ANSWER_ATTEMPTS), counting
        every request and unusable answer in `asked`; once one was unusable, `again` holds True
        (the same request at a low temperature gives the same answer: a penalty then)."""
        for reply in attempts(deadline, call):
            asked.requests += 1
            if isinstance(reply, BadAnswer):
                asked.problem, asked.unusable = str(reply), asked.unusable + 1
                continue
            answer.add_usage(reply)
            found, problem = read(reply)
            if found:
                return found
            again[0] = True
            asked.problem, asked.unusable = problem, asked.unusable + 1
        return []

    def _findings(self, chunk: Chunk, messages: Messages, tool_list: Tools, n: int,
                  deadline: float, route: Route, answer: ChunkAnswer, asked: Asked) -> None:
        """The finding request asked until a usable answer comes: the usable samples' parsed
        calls, into `asked`."""
        cap, categories = self.requests.cap(chunk), self.requests.settings.categories
        again = [False]
        call = self._call(messages, tool_list, tools.TOOL_NAME,
                          self.requests.output_tokens(chunk.changed_lines), route, n=n,
                          again=again)

        def read(reply: Reply) -> tuple[list[answers.Parsed], str]:
            parsed = [answers.parse_calls(s.calls, chunk, cap, categories) for s in reply.samples]
            # a call cut at max_tokens may have lost findings: that sample does not count
            usable = [p for p, s in zip(parsed, reply.samples) if p.usable and not s.truncated]
            return usable, ("the answer was cut at max_output_tokens" if reply.truncated
                            else parsed[0].problem)

        asked.usable = self._until_usable(call, deadline, answer, asked, again, read)

    def _two_step(self, chunk: Chunk, messages: Messages, tool_list: Tools, deadline: float,
                  route: Route, answer: ChunkAnswer, asked: Asked) -> None:
        """findings_format two-step: a free review in words (`samples` of them, one request),
        then per review a forced call on the same prefix that turns it into anchored findings."""
        again = [False]
        call = self._call(messages, tool_list, tools.TOOL_NAME, REASONING_TOKENS, route,
                          n=self.requests.settings.samples, again=again, free=True)
        # a review cut at its length still says what it found up to there
        reviews = self._until_usable(
            call, deadline, answer, asked, again,
            lambda reply: ([t for s in reply.samples if (t := s.text.strip())], "an empty review"))
        found: list[answers.Parsed] = []
        for review in reviews:
            asked.usable = []
            self._findings(chunk, self.requests.format_messages(messages, review), tool_list, 1,
                           deadline, route, answer, asked)
            found += asked.usable
        asked.usable = found

    def find(self, chunk: Chunk, depth: int, context: Context,
             deadline: float, route: Route = NO_ROUTE) -> Attempted:
        """One chunk: the finding pass (an unusable answer is asked for again, up to
        ANSWER_ATTEMPTS), agreement across samples, then the verification pass."""
        settings = self.requests.settings
        messages, tool_list = self.requests.request(chunk, context)
        answer, asked = ChunkAnswer(), Asked()
        try:
            if settings.findings_format is FindingsFormat.TWO_STEP:
                self._two_step(chunk, messages, tool_list, deadline, route, answer, asked)
            else:
                self._findings(chunk, messages, tool_list, settings.samples, deadline, route,
                               answer, asked)
        except (ContextTooLong, RequestFailed) as exc:
            return Attempted(chunk, depth, asked.requests + 1, asked.unusable, exc)
        usable, requests, unusable = asked.usable, asked.requests, asked.unusable
        if not usable:
            return Attempted(chunk, depth, requests, unusable, RequestFailed(
                f"no usable answer after {unusable} attempt(s): {asked.problem}"))
        answer.summary = next((p.summary for p in usable if p.summary), "")
        answer.invalid = sum(p.invalid for p in usable)
        answer.reanchored = sum(p.reanchored for p in usable)
        answer.candidates = sum(len(p.findings) for p in usable)
        found, answer.dropped = agree([p.findings for p in usable])
        answer.findings, restated = drop_restated(found, chunk)
        answer.dropped += restated
        if not answer.findings and summaries.names_a_problem(answer.summary):
            self.named(chunk, messages, tool_list, answer, deadline, route)
        if settings.verify and answer.findings:
            answer.verify_requests = self.verify(chunk, messages, tool_list, answer, deadline,
                                                 route)
        return Attempted(chunk, depth,
                         requests + answer.named_requests + answer.verify_requests, unusable,
                         answer)

    def named(self, chunk: Chunk, messages: Messages, tool_list: Tools, answer: ChunkAnswer,
              deadline: float, route: Route = NO_ROUTE) -> None:
        """The summary named a problem the findings list left out (a small model's habit): ask
        once more, in the same conversation, for the problems it named; else count the chunk."""
        call = self._call(self.requests.named_messages(messages, answer.summary),
                          tools.requiring(tool_list, tools.TOOL_NAME, "findings", 1), tools.TOOL_NAME,
                          self.requests.output_tokens(chunk.changed_lines), route)
        cap = self.requests.cap(chunk)
        try:
            for reply in attempts(deadline, call):
                answer.named_requests += 1
                if isinstance(reply, BadAnswer):
                    continue
                answer.add_usage(reply)
                parsed = answers.parse_calls(reply.samples[0].calls, chunk, cap,
                                             self.requests.settings.categories)
                if parsed.usable and not reply.truncated:
                    answer.findings = parsed.findings
                    answer.candidates += len(parsed.findings)
                    answer.invalid += parsed.invalid
                    break
        except (ContextTooLong, RequestFailed):
            answer.named_requests += 1
        answer.summary_only = not answer.findings

    def verify(self, chunk: Chunk, messages: Messages, tool_list: Tools, answer: ChunkAnswer,
               deadline: float, route: Route = NO_ROUTE) -> int:
        """Judge `answer.findings` in place; the requests it took. The finding pass's messages
        and tools, then the candidates, and an answer guided to a verdict per candidate (an
        unusable one is asked again, with the frequency penalty). Without a usable verdict the
        candidates stay, unverified, and the chunk says so (its review is still complete: the
        finding pass answered)."""
        candidates = answer.findings
        again = [False]
        call = self._call(self.requests.verify_messages(chunk, messages, candidates), tool_list,
                          tools.VERIFY_TOOL, self.requests.verify_tokens(len(candidates)), route,
                          again=again, schema=tools.verify_schema(len(candidates)))
        requests = 0
        try:
            for reply in attempts(deadline, call):
                requests += 1
                again[0] = True
                if isinstance(reply, BadAnswer):
                    continue
                answer.add_usage(reply)
                verdicts = answers.parse_verdicts(reply.calls, set(range(1, len(candidates) + 1)))
                answer.invalid += verdicts.invalid
                if verdicts.usable and not reply.truncated:
                    kept, dropped, _ = apply_verdicts(candidates, verdicts.by_id)
                    answer.findings, answer.dropped = kept, answer.dropped + dropped
                    return requests
        except (ContextTooLong, RequestFailed):
            requests += 1
        answer.verify_failed = True
        return requests

    def judge(self, title: str, body: str, reference: str, deadline: float) -> bool:
        """eval's judge at temperature 0; no usable judgement counts as not the same problem."""
        call = self._call(self.requests.judge_messages(title, body, reference),
                          [tools.judge_tool()], tools.JUDGE_TOOL, JUDGE_TOKENS, NO_ROUTE,
                          temperature=0.0)
        verdict = _first(attempts(deadline, call), answers.parse_judgement)
        return verdict if verdict is not None else False

    def question(self, changes: ChangeSet, author: str, question: str,
                 deadline: float) -> str | None:
        """An answer to a question about the change, or None when no usable one came back."""
        call = self._call(self.requests.question_messages(changes, author, question),
                          [tools.answer_tool()], tools.ANSWER_TOOL, REPLY_TOKENS, NO_ROUTE)
        return _first(attempts(deadline, call), answers.parse_answer)

    def reply(self, about: Anchor, thread: list[tuple[str, str]],
              deadline: float) -> answers.ThreadReply | None:
        """An answer in a finding's thread, or None when no usable one came back."""
        call = self._call(self.requests.reply_messages(about, thread), [tools.reply_tool()],
                          tools.REPLY_TOOL, REPLY_TOKENS, NO_ROUTE)
        return _first(attempts(deadline, call), answers.parse_reply)


    def forced(self, messages: Messages, tool_list: Tools, name: str, max_tokens: int,
               parse: Callable[[list[tuple[str, str]]], T | None], deadline: float
               ) -> tuple[T | None, Usage, int]:
        """A forced call asked again until `parse` accepts a complete answer: (what it parsed,
        or None; the usage of every attempt; the requests sent)."""
        call = self._call(messages, tool_list, name, max_tokens, NO_ROUTE)
        usage, sent = Usage(), 0
        try:
            for reply in attempts(deadline, call):
                sent += 1
                if isinstance(reply, BadAnswer):
                    continue
                usage += reply.usage
                parsed = None if reply.truncated else parse(reply.calls)
                if parsed is not None:
                    return parsed, usage, sent
        except (ContextTooLong, RequestFailed):
            pass
        return None, usage, sent


def _first(replies: Iterator[Reply | BadAnswer],
           parse: Callable[[list[tuple[str, str]]], T | None]) -> T | None:
    """The first complete reply `parse` accepts; None when the attempts end without one."""
    try:
        for reply in replies:
            if not isinstance(reply, BadAnswer) and not reply.truncated:
                parsed = parse(reply.calls)
                if parsed is not None:
                    return parsed
    except (ContextTooLong, RequestFailed):
        pass
    return None
