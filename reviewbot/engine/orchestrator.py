"""The orchestrator: filter → pieces → chunks → concurrent tool calls → findings → result.

It receives its parts (model client, token counter, progress) and wires them; nothing else.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.diff import ChangeSet, FileDiff, Side, check_size
from reviewbot.engine import filters, templates, tools
from reviewbot.engine.candidates import agree, apply_verdicts
from reviewbot.engine.chunking import Chunk, Piece, file_header, make_pieces, pack, split
from reviewbot.engine.deadline import until
from reviewbot.engine.definitions import Definition, called_names, defined_in
from reviewbot.engine.llm import ModelClient, Reply
from reviewbot.engine.noise import Floor, triage
from reviewbot.engine.progress import ChunkProgress, NoProgress
from reviewbot.engine.prompttext import defuse, label, quoted
from reviewbot.engine.surroundings import definition_blocks, surrounding_blocks
from reviewbot.engine.tokens import (
    DegradingCounter,
    TokenCounter,
)
from reviewbot.errors import (
    BadAnswer,
    ContextTooLong,
    ContextTooSmall,
    RequestFailed,
    redact,
)
from reviewbot.findings import Finding, Severity, merge, with_fingerprints
from reviewbot.result import Dropped, ReviewResult, Stats, unreviewed_error
from reviewbot.rules import applicable

SAFETY_TOKENS = 16  # slack for tokenizer merges across piece boundaries
MAX_RESPLITS = 6
ANSWER_ATTEMPTS = 3  # an unusable answer (no call, bad JSON, cut short) is asked for again
MAX_HEAD_FILES = 200  # files read for the code around the hunks, per review
CONTEXT_SHARE = 0.25  # of review_timeout: gathering context stops there, the review goes on


@dataclass
class ChunkAnswer:
    """A reviewed chunk: what its finding pass(es) and verification came to."""

    findings: list[Finding] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    summary: str = ""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    invalid: int = 0
    reanchored: int = 0
    candidates: int = 0
    verify_requests: int = 0
    verify_failed: bool = False

    def add_usage(self, reply: Reply) -> None:
        self.prompt_tokens += reply.prompt_tokens
        self.cached_tokens += reply.cached_tokens
        self.completion_tokens += reply.completion_tokens


@dataclass(frozen=True)
class Attempted:
    """What the requests for one chunk came to: a ChunkAnswer, or the exception that ended it."""

    chunk: Chunk
    depth: int
    attempts: int
    unusable: int  # answers that came back but could not be used
    outcome: ChunkAnswer | Exception


@dataclass
class Engine:
    settings: Settings
    client: ModelClient
    counter: TokenCounter
    model: str
    context: int  # the request limit: prompt + reserved output
    progress: ChunkProgress = field(default_factory=NoProgress)

    @property
    def budget(self) -> int:
        """Prompt tokens of a chunk with at most MIN_FINDINGS findings' worth of changed lines
        (a bigger chunk reserves `tools.extra_output` more for its answer); `chunk_tokens`
        makes review units smaller than the context would allow."""
        full = self.context - self.settings.max_output_tokens - SAFETY_TOKENS
        return min(full, self.settings.chunk_tokens) if self.settings.chunk_tokens else full

    def cap(self, chunk: Chunk) -> int:
        return tools.findings_cap(chunk.changed_lines, self.settings.max_findings_per_chunk)

    def output_tokens(self, changed_lines: int) -> int:
        return self.settings.max_output_tokens + tools.extra_output(
            changed_lines, self.settings.max_findings_per_chunk)

    # -- requests ---------------------------------------------------------------------------
    def messages(self, chunk: Chunk, total: int, context: Context) -> list[dict[str, Any]]:
        files = ["\n".join([file_header(f)] + [p.text for p in pieces])
                 for f, pieces in chunk.by_file()]
        context = context.capped()
        intent = context.intent
        paths = [f.path for f, _ in chunk.by_file()]
        user = templates.render(
            "chunk.j2", self.settings.prompts_dir, title=label(intent.title),
            description=quoted(intent.description) if intent.description else "",
            commits=[quoted(m) for m in intent.commits],
            agents_md=quoted(context.agents_md) if context.agents_md else "",
            rules=[quoted(r.text) for r in applicable(self.settings.rules, paths)],
            index=chunk.index, total=total, files=files, around=chunk.around)
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]

    @cached_property
    def system_prompt(self) -> str:
        return templates.render("system.j2", self.settings.prompts_dir,
                                categories=list(self.settings.categories))

    def request(self, chunk: Chunk, total: int,
                context: Context) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The finding pass's messages and the tools both passes send (without verification,
        only the finding tool: no second pass shares the prefix)."""
        report = tools.report_tool(chunk, self.cap(chunk), self.settings.categories)
        if not self.settings.verify:
            return self.messages(chunk, total, context), [report]
        return self.messages(chunk, total, context), [
            tools.verify_tool(self.settings.max_findings_per_chunk), report]

    def verify_messages(self, chunk: Chunk, messages: list[dict[str, Any]],
                        candidates: list[Finding]) -> list[dict[str, Any]]:
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

    def with_surroundings(self, chunks: list[Chunk], context: Context,
                          until: float = math.inf) -> list[Chunk]:
        """Each chunk with the code around its hunks, as much as its budget still holds after
        the diff and the intent (the diff always comes first: coverage does not depend on it).
        Context is gathered until the monotonic time `until`; chunks after it go without."""
        if context.files is None or not chunks or (
                self.settings.surrounding_lines == 0 and self.settings.max_enclosing_lines == 0):
            return chunks
        texts: dict[str, list[str] | None] = {}

        def head(path: str) -> list[str] | None:
            if path not in texts and (len(texts) >= MAX_HEAD_FILES or time.monotonic() > until):
                return None  # one API call per file on a forge: bounded per review
            if path not in texts:
                text = context.files(path) if context.files else None
                texts[path] = text.replace("\r\n", "\n").split("\n") if text is not None else None
            return texts[path]

        found = self._definitions(chunks, context, head)
        out = []
        for chunk in chunks:
            if time.monotonic() > until:
                out.append(chunk)
                continue
            blocks = surrounding_blocks(chunk, head, self.settings.surrounding_lines,
                                        self.settings.max_enclosing_lines)
            blocks += definition_blocks(chunk, found)  # after the code around: less relevant
            room = (self.budget - self._exact(chunk.pieces, context)
                    - tools.extra_output(chunk.changed_lines, self.settings.max_findings_per_chunk)
                    - 64)  # the section's own framing
            kept, used = [], 0
            for block, cost in zip(blocks, self.counter.count_texts(blocks) if blocks else []):
                if used + cost + 4 <= room:
                    kept.append(block)
                    used += cost + 4
            out.append(replace(chunk, around="\n".join(kept)))
        return out

    @staticmethod
    def _definitions(chunks: list[Chunk], context: Context,
                     head: Callable[[str], list[str] | None]) -> list[Definition]:
        """Definitions of the names the chunks' added lines call, found once per review."""
        if context.definitions is None:
            return []
        added = [ln.text for c in chunks for p in c.pieces for ln in p.lines if ln.kind == "+"]
        shown = [ln.text for c in chunks for p in c.pieces for ln in p.lines if ln.kind != "-"]
        found: list[Definition] = context.definitions(called_names(added, defined_in(shown)), head)
        return found

    # -- chunking ---------------------------------------------------------------------------
    def chunks(self, changes: ChangeSet, context: Context) -> list[Chunk]:
        """Pack with per-part estimates, then check every chunk's exact count and repair."""
        fixed = self._exact((), context)
        if fixed + 64 > self.budget:
            raise ContextTooSmall(
                f"the system prompt and tools take {fixed} tokens, and max_context "
                f"({self.context}) less max_output_tokens ({self.settings.max_output_tokens}) "
                f"leaves {self.budget} (chunk_tokens: {self.settings.chunk_tokens or 'off'}): "
                "no room for the diff")
        count = self.counter.count_texts

        # every file header counted in one batch (by path: hashing a FileDiff hashes its lines);
        # one call per file made a 50 MB change thousands of sequential round trips
        headers = dict(zip((f.path for f in changes.files),
                           count([file_header(f) + "\n" for f in changes.files])))

        def header_cost(file: FileDiff) -> int:
            return headers[file.path] + 1

        def piece_cost(piece: Piece) -> int:
            return piece.tokens + 2  # its joining newline, and a merge across the boundary

        def room(file: FileDiff) -> int:
            return self.budget - fixed - header_cost(file) - 8

        def reserve(changed: int) -> int:
            return self.output_tokens(changed) - self.settings.max_output_tokens

        pieces = make_pieces(changes, self.counter, room, self.settings.context_lines)
        packed = pack(pieces, self.budget, fixed, header_cost, piece_cost, reserve)
        if not self.counter.exact:  # the same counter made the estimates: nothing to check
            return packed
        fitted: list[tuple[Piece, ...]] = []
        while packed:
            leftovers: list[Piece] = []
            for chunk in packed:
                kept = list(chunk.pieces)
                while (over := self._exact(kept, context) - self.budget
                       + reserve(sum(p.owned for p in kept))) > 0:
                    if len(kept) > 1:  # the estimate let one piece too many in: move it on
                        leftovers.insert(0, kept.pop())
                    else:  # one piece alone is too big: cut it finer
                        parts = split(kept[0], self.counter, kept[0].tokens - over - 32,
                                      self.settings.context_lines)
                        kept, leftovers[:0] = parts[:1], parts[1:]
                fitted.append(tuple(kept))
            packed = pack(leftovers, self.budget, fixed, header_cost, piece_cost, reserve)
        return [Chunk.numbered(i, pieces) for i, pieces in enumerate(fitted, 1)]

    def _exact(self, pieces: Sequence[Piece], context: Context) -> int:
        return self.counter.count_request(*self.request(Chunk.numbered(0, pieces), 1, context))


    # -- the review -------------------------------------------------------------------------
    def ask(self, chunk: Chunk, depth: int, total: int, context: Context,
            deadline: float, route: str = "") -> Attempted:
        """One chunk: the finding pass (an unusable answer is asked for again, up to
        ANSWER_ATTEMPTS), agreement across samples, then the verification pass."""
        messages, tool_list = self.request(chunk, total, context)
        answer = ChunkAnswer()
        cap, samples = self.cap(chunk), self.settings.samples
        problem, unusable, requests = "the review deadline passed", 0, 0
        usable: list[tools.Parsed] = []

        def call() -> Reply:
            return self.client.call_tool(
                self.model, messages, tool_list, tools.TOOL_NAME,
                self.output_tokens(chunk.changed_lines), self.settings.temperature, n=samples,
                route=route)

        try:
            for reply in self._attempts(deadline, call):
                requests += 1
                if isinstance(reply, BadAnswer):
                    problem, unusable = str(reply), unusable + 1
                    continue
                answer.add_usage(reply)
                parsed = [tools.parse_calls(s.calls, chunk, cap, self.settings.categories)
                          for s in reply.samples]
                # a call cut at max_tokens may have lost findings: that sample does not count
                usable = [p for p, s in zip(parsed, reply.samples)
                          if p.usable and not s.truncated]
                if usable:
                    break
                problem = ("the answer was cut at max_output_tokens" if reply.truncated
                           else parsed[0].problem)
                unusable += 1
        except (ContextTooLong, RequestFailed) as exc:
            return Attempted(chunk, depth, requests + 1, unusable, exc)
        if not usable:
            return Attempted(chunk, depth, requests, unusable, RequestFailed(
                f"no usable answer after {unusable} attempt(s): {problem}"))
        answer.summary = next((p.summary for p in usable if p.summary), "")
        answer.invalid = sum(p.invalid for p in usable)
        answer.reanchored = sum(p.reanchored for p in usable)
        answer.candidates = sum(len(p.findings) for p in usable)
        answer.findings, answer.dropped = agree([p.findings for p in usable])
        if self.settings.verify and answer.findings:
            answer.verify_requests = self.verify(chunk, messages, tool_list, answer, deadline,
                                                 route)
        return Attempted(chunk, depth, requests + answer.verify_requests, unusable, answer)

    @staticmethod
    def _attempts(deadline: float, call: Callable[[], Reply]) -> Iterator[Reply | BadAnswer]:
        """Up to ANSWER_ATTEMPTS calls while the review's deadline allows, each bounded by it:
        the reply, or the BadAnswer of an answer that is no completion (asked again when the
        caller goes on); ContextTooLong and RequestFailed end the attempts."""
        for _ in range(ANSWER_ATTEMPTS):
            if time.monotonic() >= deadline:
                return
            try:
                with until(deadline):
                    reply = call()
            except BadAnswer as exc:
                yield exc
                continue
            yield reply

    def verify(self, chunk: Chunk, messages: list[dict[str, Any]],
               tool_list: list[dict[str, Any]], answer: ChunkAnswer, deadline: float,
               route: str = "") -> int:
        """Judge `answer.findings` in place; the requests it took. Without a usable verdict the
        candidates stay, unverified, and the chunk says so (its review is still complete: the
        finding pass answered)."""
        candidates = answer.findings
        verify_messages = self.verify_messages(chunk, messages, candidates)
        max_tokens = 64 + tools.TOKENS_PER_VERDICT * len(candidates)
        requests = 0

        def call() -> Reply:
            return self.client.call_tool(self.model, verify_messages, tool_list,
                                         tools.VERIFY_TOOL, max_tokens, self.settings.temperature,
                                         route=route)

        try:
            for reply in self._attempts(deadline, call):
                requests += 1
                if isinstance(reply, BadAnswer):
                    continue
                answer.add_usage(reply)
                verdicts = tools.parse_verdicts(reply.calls, set(range(1, len(candidates) + 1)))
                answer.invalid += verdicts.invalid
                if verdicts.usable and not reply.truncated:
                    kept, dropped, _ = apply_verdicts(candidates, verdicts.by_id)
                    answer.findings, answer.dropped = kept, answer.dropped + dropped
                    return requests
        except (ContextTooLong, RequestFailed):
            requests += 1
        answer.verify_failed = True
        return requests

    def review(self, changes: ChangeSet, context: Context | None = None) -> ReviewResult:
        """Review `changes`; `context` (the change's intent, the repository's AGENTS.md and the
        rules of the config that apply to a chunk's files) goes into every chunk's prompt."""
        context = context or Context()
        if isinstance(self.counter, DegradingCounter):
            self.counter.again()
        started = time.monotonic()
        deadline = started + self.settings.review_timeout
        size = sum(len(ln.text) + 2 for f in changes.files for h in f.hunks for ln in h.lines)
        check_size(size, sum(len(f.hunks) for f in changes.files), self.settings.max_diff_mb)
        reviewed, skipped = filters.split(changes, self.settings.exclude)
        stats = Stats(files_total=len(changes.files), files_reviewed=len(reviewed.files),
                      files_skipped=skipped, changed_lines=reviewed.changed_lines)
        if self.settings.fail_on_skipped:
            stats.errors += unreviewed_error([s for s in skipped if s.source])
        # context is worth a share of the time, never the review: the diff goes out regardless
        until = started + self.settings.review_timeout * CONTEXT_SHARE
        chunks = self.with_surroundings(self.chunks(reviewed, context), context, until) \
            if reviewed.files else []
        stats.chunks = len(chunks)
        self.progress.start(len(chunks))
        answers = self._answers(chunks, context, deadline, stats, route_key(reviewed, context))
        self.progress.close()
        merged = merge(with_fingerprints([f for a in answers for f in a.findings], reviewed))
        dropped = [replace(d, finding=with_fingerprints([d.finding], reviewed)[0])
                   for a in answers for d in a.dropped]
        stats.dropped = len(dropped)
        summaries = [a.summary for a in answers if a.summary]
        if stats.cut_note():
            stats.notes.append(stats.cut_note())
            if self.settings.fail_on_skipped:  # not fully reviewed: as strict as a skipped file
                stats.errors.append(f"{stats.cut_note()}, and fail_on_skipped is set")
        if isinstance(self.counter, DegradingCounter) and self.counter.problem:
            stats.notes.append("token counts fell back to a conservative estimate when "
                               f"/tokenize failed: {self.counter.problem}")
        stats.wall_seconds = time.monotonic() - started
        return ReviewResult(findings=merged,
                            summary=summarize(stats, merged, stats.notes + summaries,
                                              self.model),
                            stats=stats, model=self.model, base_url=redact(self.client.base_url),
                            dropped=dropped, held=triage(merged, self.floor))

    @property
    def floor(self) -> Floor:
        s = self.settings
        return Floor(Severity.parse(s.inline_min_severity), s.max_inline_comments,
                     s.min_confidence)

    def _answers(self, chunks: list[Chunk], context: Context, deadline: float,
                 stats: Stats, route: str = "") -> list[ChunkAnswer]:
        """Every chunk asked at once (`concurrency` in flight); a chunk the server finds too
        long is split in two and asked again. Counts go into `stats` as answers arrive."""
        total = len(chunks)
        out: list[ChunkAnswer] = []
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)

        def submit(chunk: Chunk, depth: int) -> Future[Attempted]:
            return pool.submit(self.ask, chunk, depth, total, context, deadline, route)

        pending = {submit(c, 0) for c in chunks}
        try:
            while pending:
                done, pending = wait(pending, timeout=max(deadline - time.monotonic(), 0),
                                     return_when=FIRST_COMPLETED)
                if not done:
                    stats.errors.append(
                        f"review_timeout ({self.settings.review_timeout:g} s) reached with "
                        f"{len(pending)} request(s) unanswered")
                    break
                for a in (future.result() for future in done):
                    stats.requests += a.attempts
                    stats.answers_unusable += a.unusable
                    if isinstance(a.outcome, ContextTooLong) and len(a.chunk.pieces) > 1 \
                            and a.depth < MAX_RESPLITS:
                        half = len(a.chunk.pieces) // 2
                        stats.chunks += 1
                        pending |= {submit(Chunk(a.chunk.index, part), a.depth + 1)
                                    for part in (a.chunk.pieces[:half], a.chunk.pieces[half:])}
                        continue
                    if isinstance(a.outcome, Exception):
                        stats.errors.append(redact(f"chunk {a.chunk.index}: {a.outcome}"))
                    else:
                        answer = a.outcome
                        out.append(answer)
                        stats.prompt_tokens += answer.prompt_tokens
                        stats.cached_tokens += answer.cached_tokens
                        stats.completion_tokens += answer.completion_tokens
                        stats.tool_calls_invalid += answer.invalid
                        stats.findings_reanchored += answer.reanchored
                        stats.candidates += answer.candidates
                        stats.verify_requests += answer.verify_requests
                        stats.verify_failed += answer.verify_failed
                        stats.changed_lines_sent += a.chunk.changed_lines
                        lines_cut, chars_cut = a.chunk.cut
                        stats.changed_lines_cut += lines_cut
                        stats.chars_cut += chars_cut
                    self.progress.advance()
        finally:
            # a thread still waiting ends at the deadline it carries; nothing waits for it here
            pool.shutdown(wait=False, cancel_futures=True)
        return out


def summarize(stats: Stats, findings: list[Finding], notes: list[str], model: str) -> str:
    counts = Counter(f.severity.label for f in findings)
    by = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: kv[0])) or "none"
    lines = f"{stats.changed_lines_sent} of {stats.changed_lines} changed lines"
    found = f"in {stats.requests} request(s) to {model}. Findings: {len(findings)} ({by})."
    if stats.complete:
        head = f"Reviewed {stats.files_reviewed} of {stats.files_total} files ({lines}) {found}"
    else:  # not "Reviewed 9 of 9 files (0 of 121 changed lines)": the lines are what counts
        head = (f"INCOMPLETE REVIEW: {lines} reached the model ({stats.files_reviewed} of "
                f"{stats.files_total} files reviewable) {found} {len(stats.errors)} error(s).")
    return "\n".join([head] + [f"- {note}" for note in notes[:8]])


def route_key(changes: ChangeSet, context: Context) -> str:
    """One opaque value per review for the balancer's affinity header: the same for every
    chunk and pass (and for the same change reviewed again), telling nothing of the code."""
    text = "\0".join([context.intent.title, *sorted(f.path for f in changes.files)])
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
