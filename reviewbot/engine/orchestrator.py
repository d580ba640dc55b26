"""The orchestrator: filter → chunks (fitting) → concurrent passes → findings → result.

It receives its parts (model client, token counter, progress) and wires them; the requests,
the fitting and the passes are their own modules.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from functools import cached_property, partial

from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.diff import ChangeSet, check_size
from reviewbot.engine import filters
from reviewbot.engine.attempts import Attempted, ChunkAnswer
from reviewbot.engine.beyond import Beyond
from reviewbot.engine.budget import TokenBudget
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.fitting import NOTHING, Fitting
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.messages import Requests
from reviewbot.engine.noise import Floor, triage
from reviewbot.engine.passes import Passes
from reviewbot.engine.progress import ChunkProgress, NoProgress
from reviewbot.engine.routing import Route, review_priority, route_key
from reviewbot.engine.tokens import DegradingCounter, TokenCounter
from reviewbot.engine.units import split_pairs
from reviewbot.errors import ContextTooLong
from reviewbot.findings import Finding, Severity, join_adjacent, merge, with_fingerprints
from reviewbot.redact import redact
from reviewbot.result import IssueCheck, ReviewResult, ScannerDismissal, Stats
from reviewbot.scanners import MAX_TRIAGED, on_changed_lines
from reviewbot.withheld import unreviewed_error

MAX_RESPLITS = 6
CONTEXT_SHARE = 0.25  # of review_timeout: gathering context stops there, the review goes on


@dataclass
class Engine:
    settings: Settings
    client: ModelClient
    counter: TokenCounter
    model: str
    context: int  # the request limit: prompt + reserved output
    progress: ChunkProgress = field(default_factory=NoProgress)
    budget: TokenBudget | None = None  # the tokens in flight this process may send the server

    @cached_property
    def requests(self) -> Requests:
        return Requests(self.settings, self.context)

    @cached_property
    def fitting(self) -> Fitting:
        return Fitting(self.requests, self.counter)

    @cached_property
    def passes(self) -> Passes:
        return Passes(self.requests, self.client, self.model)

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
        reviewed, skipped = filters.split(changes, self.settings.exclude,
                                          self.settings.review_lock_files)
        stats = Stats(files_total=len(changes.files), files_reviewed=len(reviewed.files),
                      files_skipped=skipped, changed_lines=reviewed.changed_lines)
        if self.settings.fail_on_skipped:
            stats.errors += unreviewed_error([s for s in skipped if s.source])
        # context is worth a share of the time, never the review: the diff goes out regardless
        until = started + self.settings.review_timeout * CONTEXT_SHARE
        fitted = self.fitting.stream(reviewed, context, until) if reviewed.files else NOTHING
        self.progress.start(fitted.estimate)
        route = Route(route_key(reviewed, context),
                      review_priority(time.time(), fitted.estimate)
                      if self.settings.priority_scheduling else None)
        answers, chunks = self._answers(fitted.chunks, context, deadline, stats, route)
        stats.test_pairs, stats.test_pairs_split = split_pairs(
            reviewed.files, [{p.file.path for p in c.pieces} for c in chunks])
        if stats.test_pairs_split:
            stats.notes.append(f"{stats.test_pairs_split} of {stats.test_pairs} changed file(s) "
                               "and their changed tests were too large for one request: "
                               "reviewed in separate parts")
        self.progress.close()
        merged = merge(with_fingerprints(join_adjacent([f for a in answers for f in a.findings]),
                                         reviewed))
        issues, scanned, dismissed = self._beyond(reviewed, context, merged, stats, deadline)
        merged = merge(merged + scanned)
        dropped = [replace(d, finding=with_fingerprints([d.finding], reviewed)[0])
                   for a in answers for d in a.dropped]
        stats.dropped = len(dropped)
        summaries = [a.summary for a in answers if a.summary]
        stats.notes += context.notes_after()
        if stats.cut_note():
            stats.notes.append(stats.cut_note())
            if self.settings.fail_on_skipped:  # not fully reviewed: as strict as a skipped file
                stats.errors.append(f"{stats.cut_note()}, and fail_on_skipped is set")
        if stats.summary_only:
            stats.notes.append(f"in {stats.summary_only} part(s) the model's summary named a "
                               "problem that it did not report as a finding, even when asked "
                               "again (see the summary)")
        if isinstance(self.counter, DegradingCounter) and self.counter.problem:
            stats.notes.append("token counts fell back to a conservative estimate when "
                               f"/tokenize failed: {self.counter.problem}")
        stats.wall_seconds = time.monotonic() - started
        return ReviewResult(findings=merged,
                            summary=summarize(stats, merged, stats.notes + summaries,
                                              self.model),
                            stats=stats, model=self.model, base_url=redact(self.client.base_url),
                            dropped=dropped, held=triage(merged, self.floor), issues=issues,
                            scanner_dismissed=dismissed)

    def _beyond(self, reviewed: ChangeSet, context: Context, findings: list[Finding],
                stats: Stats, deadline: float
                ) -> tuple[list[IssueCheck], list[Finding], list[ScannerDismissal]]:
        """The linked issues checked, and the scanners' results on added lines triaged: the
        confirmed ones as findings (none where the model already found something on that
        line); a result without a usable verdict leaves the review incomplete."""
        beyond = Beyond(self.requests, partial(self.passes.forced, deadline=deadline))
        issues = beyond.issues(reviewed, context.capped().issues) if context.issues else []
        results = on_changed_lines(list(context.scanner), reviewed)
        if len(results) > MAX_TRIAGED:
            stats.errors.append(f"{len(results) - MAX_TRIAGED} scanner result(s) on changed "
                                f"lines beyond the {MAX_TRIAGED} a review triages: not triaged")
        results = results[:MAX_TRIAGED]
        confirmed, dismissed, undecided = beyond.triage(reviewed, results)
        if undecided:
            stats.errors.append(f"{len(undecided)} scanner result(s) got no usable verdict from "
                                "the model: " + ", ".join(f"{r.rule} at {r.path}:{r.line}"
                                                          for r in undecided[:5]))
        stats.scanner_results, stats.scanner_confirmed = len(results), len(confirmed)
        stats.requests += beyond.requests_sent
        stats.usage += beyond.usage
        taken = {(f.path, f.side, f.line) for f in findings}
        fresh = [f for f in confirmed if (f.path, f.side, f.line) not in taken]
        return issues, with_fingerprints(fresh, reviewed), dismissed

    @property
    def floor(self) -> Floor:
        s = self.settings
        return Floor(Severity.parse(s.inline_min_severity), s.max_inline_comments,
                     s.min_confidence)

    def _answers(self, chunks: Generator[Chunk, None, None], context: Context, deadline: float,
                 stats: Stats, route: Route) -> tuple[list[ChunkAnswer], list[Chunk]]:
        """Each chunk asked as soon as it is fitted (`concurrency` in flight), while the next
        ones are counted; a chunk the server finds too long is split in two and asked again.
        Counts go into `stats` as answers arrive. The answers, and the chunks sent."""
        out: list[ChunkAnswer] = []
        sent: list[Chunk] = []
        started = time.monotonic()
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency)

        review = uuid.uuid4().hex  # this review's share of the process's budget
        held: list[float] = []  # token-seconds of the server's cache, per request

        def submit(chunk: Chunk, depth: int) -> Future[Attempted]:
            stats.chunks += 1
            return pool.submit(self._ask, chunk, depth, context, deadline, route, review, held)

        pending: set[Future[Attempted]] = set()

        def take(a: Attempted) -> None:
            self._take(a, stats, out, lambda chunk: pending.add(submit(chunk, a.depth + 1)))

        feeding = True
        try:
            while True:
                if feeding and time.monotonic() >= deadline:
                    feeding = False
                    stats.errors.append(f"review_timeout ({self.settings.review_timeout:g} s) "
                                        "reached before every part of the change was sent")
                if feeding:  # fit the next chunk, and take whatever has come back meanwhile
                    chunk = next(chunks, None)
                    feeding = chunk is not None
                    if chunk is not None:
                        sent.append(chunk)
                        pending.add(submit(chunk, 0))
                    done = {f for f in pending if f.done()}
                elif pending:
                    done, _ = wait(pending, timeout=max(deadline - time.monotonic(), 0),
                                   return_when=FIRST_COMPLETED)
                    if not done:
                        stats.errors.append(
                            f"review_timeout ({self.settings.review_timeout:g} s) reached with "
                            f"{len(pending)} request(s) unanswered")
                        break
                else:
                    break
                pending -= done
                for future in done:
                    take(future.result())
        finally:
            # a thread still waiting ends at the deadline it carries; nothing waits for it here
            pool.shutdown(wait=False, cancel_futures=True)
            chunks.close()  # nor for a chunk being counted
        stats.server_seconds = (sum(held) / self.budget.capacity if self.budget is not None
                                else time.monotonic() - started)
        return out, sent

    def _ask(self, chunk: Chunk, depth: int, context: Context, deadline: float, route: Route,
             review: str, held: list[float]) -> Attempted:
        """One chunk's passes, within the process's budget; the token-seconds it held of the
        server's cache go into `held`."""
        if self.budget is None:
            return self.passes.find(chunk, depth, context, deadline, route)
        tokens, room = self._tokens(chunk)
        with self.budget.hold(review, tokens, deadline, room) as granted:
            began = time.monotonic()
            try:  # not granted: the deadline passed while waiting, and nothing goes out
                attempted = self.passes.find(chunk, depth, context,
                                             deadline if granted else 0.0, route)
            finally:
                held.append(granted * (time.monotonic() - began))
        if isinstance(attempted.outcome, ChunkAnswer):
            self.budget.answers.add(attempted.outcome.usage.completion_tokens)
        return attempted

    def _tokens(self, chunk: Chunk) -> tuple[int, int]:
        """What a chunk's requests hold of the server's KV cache: their diff and the code
        around it (the shared prompt prefix is cached once for all of them), and room for
        their answers."""
        return (sum(p.tokens for p in chunk.pieces) + len(chunk.around) // 3,
                self.requests.output_tokens(chunk.changed_lines) * self.settings.samples)

    def _take(self, a: Attempted, stats: Stats, out: list[ChunkAnswer],
              resubmit: Callable[[Chunk], object]) -> None:
        """What one chunk's requests came to: counted, or split in two and asked again."""
        stats.requests += a.attempts
        stats.answers_unusable += a.unusable
        if isinstance(a.outcome, ContextTooLong) and len(a.chunk.pieces) > 1 \
                and a.depth < MAX_RESPLITS:
            half = len(a.chunk.pieces) // 2
            stats.chunks -= 1  # the halves count, not what they replace
            for part in (a.chunk.pieces[:half], a.chunk.pieces[half:]):
                resubmit(Chunk(a.chunk.index, part))
            return
        if isinstance(a.outcome, Exception):
            stats.errors.append(redact(f"chunk {a.chunk.index}: {a.outcome}"))
        else:
            out.append(a.outcome)
            _count(stats, a.chunk, a.outcome)
        self.progress.advance()


def _count(stats: Stats, chunk: Chunk, answer: ChunkAnswer) -> None:
    stats.usage += answer.usage
    stats.tool_calls_invalid += answer.invalid
    stats.findings_reanchored += answer.reanchored
    stats.candidates += answer.candidates
    stats.verify_requests += answer.verify_requests
    stats.verify_failed += answer.verify_failed
    stats.named_requests += answer.named_requests
    stats.summary_only += answer.summary_only
    stats.changed_lines_sent += chunk.changed_lines
    lines_cut, chars_cut = chunk.cut
    stats.changed_lines_cut += lines_cut
    stats.chars_cut += chars_cut

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
