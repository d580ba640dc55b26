"""The orchestrator: filter → pieces → chunks → concurrent tool calls → findings → result.

It receives its parts (model client, token counter, progress) and wires them; nothing else.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import httpx

from reviewbot import filters, templates, tools
from reviewbot.chunking import Chunk, Piece, file_header, make_pieces, pack, split
from reviewbot.config import Settings
from reviewbot.deadline import DeadlineTransport, until
from reviewbot.diff import ChangeSet, FileDiff
from reviewbot.errors import BadAnswer, ContextTooLong, RequestFailed, redact
from reviewbot.findings import Finding, merge, with_fingerprints
from reviewbot.llm import ModelClient, Reply
from reviewbot.prompttext import label
from reviewbot.report.progress import ChunkProgress, NoProgress
from reviewbot.result import ReviewResult, Stats, unreviewed_error
from reviewbot.tokens import EstimateTokenCounter, LocalTokenCounter, TokenCounter, VllmTokenCounter

SAFETY_TOKENS = 16  # slack for tokenizer merges across piece boundaries
MAX_RESPLITS = 6
ANSWER_ATTEMPTS = 3  # an unusable answer (no call, bad JSON, cut short) is asked for again


@dataclass(frozen=True)
class Attempted:
    """What the requests for one chunk came to: (Reply, Parsed), or the exception that ended it."""

    chunk: Chunk
    depth: int
    attempts: int
    unusable: int  # answers that came back but could not be used
    outcome: Any


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
        return self.context - self.settings.max_output_tokens - SAFETY_TOKENS

    # -- requests ---------------------------------------------------------------------------
    def messages(self, chunk: Chunk, total: int, title: str) -> list[dict[str, Any]]:
        files = ["\n".join([file_header(f)] + [p.text for p in pieces])
                 for f, pieces in chunk.by_file()]
        user = templates.render("chunk.j2", self.settings.prompts_dir, title=label(title),
                                index=chunk.index, total=total, files=files)
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]

    @cached_property
    def system_prompt(self) -> str:
        return templates.render("system.j2", self.settings.prompts_dir)

    def request(self, chunk: Chunk, total: int, title: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        return self.messages(chunk, total, title), tools.tool_schema(
            chunk, self.settings.max_findings_per_chunk)

    # -- chunking ---------------------------------------------------------------------------
    def chunks(self, changes: ChangeSet, title: str) -> list[Chunk]:
        """Pack with per-part estimates, then check every chunk's exact count and repair."""
        fixed = self._exact((), title)
        count = self.counter.count_texts
        # one {"minimum", "maximum"} range in the row schema per run of consecutive rows
        range_cost = count([json.dumps({"minimum": 999999, "maximum": 999999}) + ", "])[0]

        headers: dict[str, int] = {}  # by path: hashing a FileDiff hashes all its lines

        def header_cost(file: FileDiff) -> int:
            if file.path not in headers:
                headers[file.path] = count([file_header(file) + "\n"])[0] + 1
            return headers[file.path]

        def piece_cost(piece: Piece) -> int:
            return piece.tokens + 2  # its joining newline, and a merge across the boundary

        def room(file: FileDiff) -> int:
            return self.budget - fixed - header_cost(file) - range_cost - 8

        pieces = make_pieces(changes, self.counter, room, self.settings.context_lines)
        packed = pack(pieces, self.budget, fixed, header_cost, piece_cost, range_cost)
        if not self.counter.exact:  # the same counter made the estimates: nothing to check
            return packed
        fitted: list[tuple[Piece, ...]] = []
        while packed:
            leftovers: list[Piece] = []
            for chunk in packed:
                kept = list(chunk.pieces)
                while (over := self._exact(kept, title) - self.budget) > 0:
                    if len(kept) > 1:  # the estimate let one piece too many in: move it on
                        leftovers.insert(0, kept.pop())
                    else:  # one piece alone is too big: cut it finer
                        parts = split(kept[0], self.counter, kept[0].tokens - over - 32,
                                      self.settings.context_lines)
                        kept, leftovers[:0] = parts[:1], parts[1:]
                fitted.append(tuple(kept))
            packed = pack(leftovers, self.budget, fixed, header_cost, piece_cost, range_cost)
        return [Chunk(i, pieces) for i, pieces in enumerate(fitted, 1)]

    def _exact(self, pieces: Sequence[Piece], title: str) -> int:
        return self.counter.count_request(*self._as_pair(self.request(Chunk(0, tuple(pieces)), 1, title)))

    @staticmethod
    def _as_pair(req: tuple[list[dict[str, Any]], dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return req[0], [req[1]]

    # -- the review -------------------------------------------------------------------------
    def ask(self, chunk: Chunk, depth: int, total: int, title: str, deadline: float) -> Attempted:
        """One chunk's requests: an unusable answer is asked for again, up to ANSWER_ATTEMPTS."""
        messages, tool = self.request(chunk, total, title)
        problem, unusable = "the review deadline passed", 0
        for attempt in range(1, ANSWER_ATTEMPTS + 1):
            if time.monotonic() >= deadline:
                break
            try:
                with until(deadline):
                    reply = self.client.call_tool(self.model, messages, tool,
                                                  self.settings.max_output_tokens,
                                                  self.settings.temperature)
            except (ContextTooLong, RequestFailed) as exc:
                return Attempted(chunk, depth, attempt, unusable, exc)
            except BadAnswer as exc:
                problem, unusable = str(exc), unusable + 1
                continue
            parsed = tools.parse_calls(reply.calls, chunk, self.settings.max_findings_per_chunk)
            if reply.truncated:  # a call cut short may have lost findings
                problem = "the answer was cut at max_output_tokens"
            elif not parsed.usable:
                problem = parsed.problem
            else:
                return Attempted(chunk, depth, attempt, unusable, (reply, parsed))
            unusable += 1
        return Attempted(chunk, depth, unusable, unusable,
                         RequestFailed(f"no usable answer after {unusable} attempt(s): {problem}"))

    def review(self, changes: ChangeSet, title: str = "") -> ReviewResult:
        started = time.monotonic()
        deadline = started + self.settings.review_timeout
        reviewed, skipped = filters.split(changes, self.settings.exclude)
        stats = Stats(files_total=len(changes.files), files_reviewed=len(reviewed.files),
                      files_skipped=skipped, changed_lines=reviewed.changed_lines)
        if self.settings.fail_on_skipped:
            stats.errors += unreviewed_error([s for s in skipped if s.source])
        chunks = self.chunks(reviewed, title) if reviewed.files else []
        stats.chunks = len(chunks)
        self.progress.start(len(chunks))
        answers = self._answers(chunks, title, deadline, stats)
        self.progress.close()
        findings = [f for _, parsed in answers for f in parsed.findings]
        merged = merge(with_fingerprints(findings, reviewed))
        summaries = [parsed.summary for _, parsed in answers if parsed.summary]
        stats.wall_seconds = time.monotonic() - started
        return ReviewResult(findings=merged,
                            summary=summarize(stats, merged, summaries, self.model),
                            stats=stats, model=self.model, base_url=redact(self.client.base_url))

    def _answers(self, chunks: list[Chunk], title: str, deadline: float,
                 stats: Stats) -> list[tuple[Reply, tools.Parsed]]:
        """Every chunk asked at once (`concurrency` in flight); a chunk the server finds too
        long is split in two and asked again. Counts go into `stats` as answers arrive."""
        total = len(chunks)
        out: list[tuple[Reply, tools.Parsed]] = []
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)

        def submit(chunk: Chunk, depth: int) -> Future[Attempted]:
            return pool.submit(self.ask, chunk, depth, total, title, deadline)

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
                        reply, parsed = a.outcome
                        out.append((reply, parsed))
                        stats.prompt_tokens += reply.prompt_tokens
                        stats.completion_tokens += reply.completion_tokens
                        stats.tool_calls_invalid += parsed.invalid
                        stats.findings_reanchored += parsed.reanchored
                        stats.changed_lines_sent += a.chunk.changed_lines
                    self.progress.advance()
        finally:
            # a thread still waiting ends at the deadline it carries; nothing waits for it here
            pool.shutdown(wait=False, cancel_futures=True)
        return out


def summarize(stats: Stats, findings: list[Finding], notes: list[str], model: str) -> str:
    counts = Counter(f.severity.label for f in findings)
    by = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: kv[0])) or "none"
    head = (f"Reviewed {stats.files_reviewed} of {stats.files_total} files "
            f"({stats.changed_lines_sent} of {stats.changed_lines} changed lines) in "
            f"{stats.requests} request(s) to {model}. Findings: {len(findings)} ({by}).")
    if not stats.complete:
        head = "INCOMPLETE REVIEW: " + head + f" {len(stats.errors)} error(s)."
    return "\n".join([head] + [f"- {note}" for note in notes[:8]])


def counter_for(settings: Settings, client: ModelClient, model: str,
                http: httpx.Client) -> TokenCounter:
    """The most exact counter available: the server's /tokenize, a tokenizer.json, an estimate."""
    # /tokenize is outside vLLM's /v1, but a load balancer in front may still want the key
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    vllm = VllmTokenCounter.probe(client.root_url, model, http, headers)
    if vllm is not None:
        return vllm
    if settings.tokenizer:
        return LocalTokenCounter(settings.tokenizer)
    return EstimateTokenCounter()


def make_engine(settings: Settings, progress: ChunkProgress | None = None) -> Engine:
    # one connection pool (and one TLS context, which costs real CPU to build) for everything
    limits = httpx.Limits(max_connections=max(20, 2 * settings.concurrency))
    transport = DeadlineTransport(httpx.HTTPTransport(limits=limits), settings.request_timeout)
    http = httpx.Client(timeout=settings.request_timeout, transport=transport)
    client = ModelClient(settings.base_url, settings.api_key, settings.request_timeout,
                         settings.retries, http_client=http)
    served = client.discover(settings.model)
    context = min(served.max_model_len or settings.max_context, settings.max_context)
    return Engine(settings, client, counter_for(settings, client, served.model, http),
                  served.model, context, progress or NoProgress())


def make_reviewer(settings: Settings, progress: ChunkProgress | None = None) -> Callable[[ChangeSet], ReviewResult]:
    """What forges and the webhook call: a ChangeSet in, a ReviewResult out."""
    engine = make_engine(settings, progress)
    return engine.review
