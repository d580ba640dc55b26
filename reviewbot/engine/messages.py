"""The requests: the messages and tools of the finding pass, the verification pass and eval's
judge, each chunk's findings cap and output budget. Pure: no model, no counter."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from reviewbot.choices import FindingsFormat
from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.diff import ChangeSet, FileDiff, Side
from reviewbot.engine import templates, tools
from reviewbot.engine.chunking import Chunk, file_header
from reviewbot.engine.prompttext import defuse, framed, label, quoted
from reviewbot.findings import Finding
from reviewbot.rules import applicable

SAFETY_TOKENS = 16  # slack for tokenizer merges across piece boundaries
JUDGE_TOKENS = 256
REPLY_TOKENS = 768
# a question's diff is cut by characters (no tokenizer round trips for a chat answer): 2.5 a
# token keeps code, whose tokens are short, inside the context
QUESTION_CHARS_PER_TOKEN = 2.5
QUESTION_OVERHEAD = 1024  # the prompt's own words and the question
# findings_format reason and two-step: room for the model's own review before its findings (the
# `analysis` string, or the free answer that the second request then formats), and the words
# of that second request
REASONING_TOKENS = 1024
REASONING_OVERHEAD = 128

Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]]


@dataclass
class Requests:
    settings: Settings
    context: int  # the request limit: prompt + reserved output

    @property
    def whole_budget(self) -> int:
        """Prompt tokens the model's context holds beside the answer: a changed line longer
        than a review unit gets a request of its own up to this."""
        return self.context - self.settings.max_output_tokens - SAFETY_TOKENS

    @property
    def budget(self) -> int:
        """Prompt tokens of a chunk with at most MIN_FINDINGS findings' worth of changed lines
        (a bigger chunk reserves `tools.extra_output` more for its answer); `chunk_tokens`
        makes review units smaller than the context would allow."""
        full = self.whole_budget
        return min(full, self.settings.chunk_tokens) if self.settings.chunk_tokens else full

    def cap(self, chunk: Chunk) -> int:
        return tools.findings_cap(chunk.changed_lines, self.settings.max_findings_per_chunk)

    def output_tokens(self, changed_lines: int) -> int:
        return self.settings.max_output_tokens + self.extra_output(changed_lines)

    def extra_output(self, changed_lines: int) -> int:
        reasoning = REASONING_TOKENS + REASONING_OVERHEAD if self.reasons_first else 0
        return tools.extra_output(changed_lines, self.settings.max_findings_per_chunk) + reasoning

    @cached_property
    def system_prompt(self) -> str:
        return templates.render("system.j2", self.settings.prompts_dir,
                                categories=list(self.settings.categories),
                                json_answer=self.json_answer, mode=self.mode)

    @property
    def mode(self) -> str:
        return self.settings.findings_format

    @property
    def json_answer(self) -> bool:
        """Findings asked for as JSON in a free answer (findings_format json), not a forced call."""
        return self.mode is FindingsFormat.JSON

    @property
    def reasons_first(self) -> bool:
        """The model reviews in words before it lists findings: inside the call's first string
        (reason) or in a free answer that a second request formats (two-step)."""
        return self.mode in (FindingsFormat.REASON, FindingsFormat.TWO_STEP)

    def messages(self, chunk: Chunk, context: Context) -> Messages:
        files = ["\n".join([file_header(f)] + [p.text for p in pieces])
                 for f, pieces in chunk.by_file()]
        context = context.capped()
        intent = context.intent
        paths = [f.path for f, _ in chunk.by_file()]
        user = templates.render(
            "chunk.j2", self.settings.prompts_dir, title=label(intent.title),
            description=quoted(intent.description) if intent.description else "",
            commits=[quoted(m) for m in intent.commits],
            issues=[(label(i.ref), label(i.title)) for i in context.issues],
            agents_md=quoted(context.agents_md) if context.agents_md else "",
            rules=[quoted(r.text) for r in applicable(self.settings.rules + context.guidance,
                                                      paths)],
            index=chunk.index, whole=chunk.whole, files=files, around=chunk.around,
            json_answer=self.json_answer, mode=self.mode, cap=self.cap(chunk),
            categories=list(self.settings.categories))
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]

    def request(self, chunk: Chunk, context: Context) -> tuple[Messages, Tools]:
        """The finding pass's messages and its tools, which the verification sends again
        untouched (a shared prefix); a free JSON answer sends none."""
        if self.json_answer:
            return self.messages(chunk, context), []
        return self.messages(chunk, context), [
            tools.report_tool(chunk, self.cap(chunk), self.settings.categories,
                              analysis=self.mode is FindingsFormat.REASON)]

    def format_messages(self, messages: Messages, review: str) -> Messages:
        """two-step's second request: the first request's messages (a shared prefix), the
        model's own free review as its turn, then the ask to report it through the tool."""
        text = templates.render("format.j2", self.settings.prompts_dir)
        # the model's words, steered perhaps by the diff: no special token may open a turn
        return [*messages, {"role": "assistant", "content": defuse(review)},
                {"role": "user", "content": text}]

    def verify_messages(self, chunk: Chunk, messages: Messages,
                        candidates: list[Finding]) -> Messages:
        """The finding pass's messages, byte for byte, then the candidates to judge."""
        rows: dict[tuple[str, Side, int | None], int] = {
            (r.file.path, r.side, r.number): n for n, r in chunk.rows().items()}
        shown = [{"id": i, "row": rows.get((f.path, f.side, f.line)), "path": label(f.path),
                  "side": f.side.value, "line": f.line, "end_line": f.end_line,
                  "category": f.category, "severity": f.severity.label,
                  "title": defuse(f.title), "body": defuse(f.body),
                  "suggestion": defuse(f.suggestion) if f.suggestion is not None else None}
                 for i, f in enumerate(candidates, 1)]
        text = templates.render("verify.j2", self.settings.prompts_dir, candidates=shown)
        return [*messages, {"role": "user", "content": text}]

    def named_messages(self, messages: Messages, summary: str) -> Messages:
        """The finding pass's messages, then its own summary back, asking for what it named."""
        text = templates.render("named.j2", self.settings.prompts_dir, summary=quoted(summary),
                                json_answer=self.json_answer)
        return [*messages, {"role": "user", "content": text}]

    def verify_tokens(self, candidates: int) -> int:
        return 64 + tools.TOKENS_PER_VERDICT * candidates

    def judge_messages(self, title: str, body: str, reference: str) -> Messages:
        """eval's judge: is a finding (title, body) the same problem as a reference comment?"""
        return [{"role": "system",
                 "content": templates.render("judge.j2", self.settings.prompts_dir).rstrip("\n")},
                {"role": "user", "content": templates.render(
                    "judge_pair.j2", self.settings.prompts_dir, title=defuse(title),
                    body=defuse(body), reference=defuse(reference)).rstrip("\n")}]

    def question_messages(self, changes: ChangeSet, author: str, question: str) -> Messages:
        """A question about the change asked outside the bot's threads: the change's diff,
        whole files while they fit QUESTION_CHARS_PER_TOKEN × the context left for it (the
        files left out counted), and the question, all framed as untrusted data."""
        room = int((self.context - REPLY_TOKENS - QUESTION_OVERHEAD) * QUESTION_CHARS_PER_TOKEN)
        diff, cut = diff_text(changes, room)
        text = templates.render(
            "question.j2", self.settings.prompts_dir, diff=framed(diff), cut=cut,
            author=label(author), question=quoted(question))
        return [{"role": "user", "content": text}]

    def reply_messages(self, about: Anchor, thread: list[tuple[str, str]]) -> Messages:
        """A thread's answer: the bot's finding, the code at its anchor now, the thread so far
        ((author, text) pairs, oldest first), every part of it framed as untrusted data."""
        text = templates.render(
            "reply.j2", self.settings.prompts_dir, finding=quoted(about.finding),
            path=label(about.path), line=about.line, head=label(about.head[:12]),
            code=framed(about.code), moved=label(about.moved),
            thread=[f"{label(who)} wrote:\n{quoted(said)}" for who, said in thread])
        return [{"role": "user", "content": text}]


def diff_text(changes: ChangeSet, room: int) -> tuple[str, int]:
    """The change's diff, whole files while they fit in `room` characters, and how many files
    were left out."""
    shown: list[str] = []
    for file in changes.files:
        text = _file_text(file)
        if sum(map(len, shown)) + len(text) > room:
            break
        shown.append(text)
    return "\n".join(shown), len(changes.files) - len(shown)


def _file_text(file: FileDiff) -> str:
    lines = [f"--- {label(file.path)}"]
    for hunk in file.hunks:
        lines.append(hunk.header)
        lines += [line.kind + line.text for line in hunk.lines]
    return "\n".join(lines)


@dataclass(frozen=True)
class Anchor:
    """What a thread is about: the finding's text and where it sits at the current head."""

    finding: str
    path: str
    line: int | None
    head: str
    code: str  # numbered lines around the anchor at `head` ("" when the file is gone)
    moved: str = ""  # where it was, when the change has moved on since the finding
