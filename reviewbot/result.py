"""The outcome of one review: findings, what was left out and why, and whether it is complete."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from reviewbot.context import Context
from reviewbot.diff import ChangeSet
from reviewbot.errors import EXIT_FINDINGS, EXIT_INCOMPLETE, EXIT_OK
from reviewbot.findings import Finding, Severity
from reviewbot.withheld import LOCK_FILE, Dropped, Held, HeldTo, SkippedFile


class IssueVerdict(StrEnum):
    ADDRESSED = "addressed"
    PARTLY = "partly"
    NOT = "not"
    UNKNOWN = "unknown"  # no usable answer came back

    @property
    def words(self) -> str:
        """As a summary says it."""
        return {"addressed": "addressed", "partly": "partly addressed",
                "not": "not addressed"}.get(self.value,
                                            "not judged (no usable answer from the model)")


@dataclass(frozen=True)
class IssueCheck:
    """Whether the change does what a linked issue asks, in the model's judgement."""

    ref: str
    title: str
    verdict: IssueVerdict
    missing: str = ""  # what is not done yet (partly, not)

    def to_dict(self) -> dict[str, str]:
        return {"ref": self.ref, "title": self.title, "verdict": self.verdict.value,
                "missing": self.missing}


@dataclass(frozen=True)
class ScannerDismissal:
    """A scanner's result on a changed line that the model's triage found not to be a real
    problem here, and why (listed in the summary, never gating)."""

    tool: str
    rule: str
    path: str
    line: int
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"tool": self.tool, "rule": self.rule, "path": self.path, "line": self.line,
                "reason": self.reason}

@dataclass(frozen=True)
class Usage:
    """Tokens a request, a chunk or a review cost, as the server reported them."""

    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, from the prefix cache (if the server says)
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.completion_tokens + other.completion_tokens)

    def to_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                "completion_tokens": self.completion_tokens}


@dataclass
class Stats:
    files_total: int = 0
    files_reviewed: int = 0
    files_skipped: list[SkippedFile] = field(default_factory=list)
    changed_lines: int = 0  # changed lines of the reviewed files
    changed_lines_sent: int = 0  # of those, how many reached the model in a completed request
    changed_lines_cut: int = 0  # of those sent, lines longer than a request: shown cut short
    chars_cut: int = 0  # the characters of the cut lines that the model did not see
    chunks: int = 0
    test_pairs: int = 0  # changed files reviewed with their changed tests (engine.units)
    test_pairs_split: int = 0  # of those, pairs too large for one request: sent apart
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    tool_calls_invalid: int = 0
    answers_unusable: int = 0  # answers asked for again (no call, bad JSON, cut short, …)
    findings_reanchored: int = 0
    candidates: int = 0  # findings the finding pass(es) produced, before agreement and verify
    dropped: int = 0  # candidates not kept (see ReviewResult.dropped)
    verify_requests: int = 0  # of `requests`, those of the verification pass
    verify_failed: int = 0  # chunks whose verification had no usable answer: kept unverified
    # a summary that names a problem beside an empty findings list (small real models): the
    # chunk is asked once more for the problems it named; those still without a finding
    named_requests: int = 0
    summary_only: int = 0
    scanner_results: int = 0  # the scanners' results on added lines, asked about (triage)
    scanner_confirmed: int = 0  # of those, confirmed: findings like the model's own
    learnings_applied: int = 0  # the project's learnings whose files are in the change
    wall_seconds: float = 0.0
    # the server's time this review took: its wall seconds times the share of the server's
    # KV cache its requests held (the whole server where the cache's size is unknown)
    server_seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth knowing; the review is complete

    @property
    def complete(self) -> bool:
        return not self.errors and self.changed_lines_sent == self.changed_lines

    def skipped_note(self) -> str:
        """The changed files the coverage figure leaves out because they were skipped by a
        rule the change can trigger: "1 lock file not reviewed" ("" when none)."""
        locks = sum(1 for s in self.files_skipped if s.reason == LOCK_FILE)
        others = sum(1 for s in self.files_skipped if s.source and s.reason != LOCK_FILE)
        parts = [f"{locks} lock file{'s' * (locks != 1)} not reviewed"] if locks else []
        if others:
            parts.append(f"{others} other changed file{'s' * (others != 1)} not reviewed")
        return ", ".join(parts)

    def cut_note(self) -> str:
        """What every output says when lines were cut short ("" when none were)."""
        if not self.changed_lines_cut:
            return ""
        return (f"{self.changed_lines_cut} changed line(s) longer than a request were shown cut "
                f"short: {self.chars_cut:,} characters not reviewed")

    def to_dict(self) -> dict[str, object]:
        return {
            "files_total": self.files_total,
            "files_reviewed": self.files_reviewed,
            "files_skipped": [{"path": s.path, "reason": s.reason, "source": s.source}
                              for s in self.files_skipped],
            "changed_lines": self.changed_lines,
            "changed_lines_sent": self.changed_lines_sent,
            "changed_lines_cut": self.changed_lines_cut,
            "chars_cut": self.chars_cut,
            "chunks": self.chunks,
            "test_pairs": self.test_pairs,
            "test_pairs_split": self.test_pairs_split,
            "requests": self.requests,
            **self.usage.to_dict(),
            "tool_calls_invalid": self.tool_calls_invalid,
            "answers_unusable": self.answers_unusable,
            "findings_reanchored": self.findings_reanchored,
            "candidates": self.candidates,
            "dropped": self.dropped,
            "scanner_results": self.scanner_results,
            "scanner_confirmed": self.scanner_confirmed,
            "verify_requests": self.verify_requests,
            "verify_failed": self.verify_failed,
            "named_requests": self.named_requests,
            "summary_only": self.summary_only,
            "learnings_applied": self.learnings_applied,
            "wall_seconds": round(self.wall_seconds, 3),
            "server_seconds": round(self.server_seconds, 3),
            "complete": self.complete,
            "errors": list(self.errors),
            "notes": list(self.notes),
        }


@dataclass
class ReviewResult:
    findings: list[Finding]
    summary: str
    stats: Stats
    model: str = ""
    base_url: str = ""
    dropped: list[Dropped] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    # the bot's findings from earlier reviews of this change whose threads are still open:
    # the verdict covers them too, so a retry or an unrelated push cannot turn a gate green
    earlier: list[Finding] = field(default_factory=list)
    issues: list[IssueCheck] = field(default_factory=list)
    scanner_dismissed: list[ScannerDismissal] = field(default_factory=list)

    @classmethod
    def failed(cls, changes: ChangeSet, error: str) -> ReviewResult:
        """What a review that stopped on `error` leaves: nothing reviewed, and why (the report
        of an exit 3 is still written: a CI artifact must not go missing)."""
        stats = Stats(files_total=len(changes.files), changed_lines=changes.changed_lines,
                      errors=[error])
        return cls([], f"INCOMPLETE REVIEW: nothing was reviewed: {error}", stats)

    @property
    def complete(self) -> bool:
        return self.stats.complete

    def hold_back(self, fingerprints: list[str], reason: str) -> None:
        """These findings are counted, never shown, never gating (unless already held)."""
        held = {h.fingerprint for h in self.held}
        self.held += [Held(fp, HeldTo.NONE, reason) for fp in dict.fromkeys(fingerprints)
                      if fp not in held]

    def hidden(self) -> set[str]:
        """Fingerprints held back below the noise floor: counted, never shown, never gating."""
        return {h.fingerprint for h in self.held if h.to is HeldTo.NONE}

    def gating(self) -> list[Finding]:
        """What the verdict covers: this review's findings above the noise floor, and the open
        findings of earlier reviews."""
        hidden = self.hidden()
        return [f for f in self.findings if f.fingerprint not in hidden] + self.earlier

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.gating()), default=None)

    def to_dict(self) -> dict[str, object]:
        held = {h.fingerprint: h for h in self.held}
        return {
            "findings": [{**f.to_dict(), "held_back": _held(held.get(f.fingerprint))}
                         for f in self.findings],
            "dropped": [d.to_dict() for d in self.dropped],
            "open_earlier": [f.to_dict() for f in self.earlier],
            "linked_issues": [i.to_dict() for i in self.issues],
            "scanner_dismissed": [d.to_dict() for d in self.scanner_dismissed],
            "summary": self.summary,
            "stats": self.stats.to_dict(),
            "model": self.model,
        }


def _held(h: Held | None) -> dict[str, str] | None:
    return None if h is None else {"to": h.to, "reason": h.reason}


# What forges and the listener call: a change and what a reviewer knows of it in, a review out.
Reviewer = Callable[[ChangeSet, Context], ReviewResult]


def exit_code(complete: bool, worst: Severity | None, fail_on: str) -> int:
    """3 when incomplete (never reported as clean), 1 when a finding reaches fail_on, else 0."""
    if not complete:
        return EXIT_INCOMPLETE
    if fail_on != "never" and worst is not None and worst >= Severity.parse(fail_on):
        return EXIT_FINDINGS
    return EXIT_OK


class RunMode(StrEnum):  # what a run did: reviewed all, since the last reviewed head, or not
    FULL = "full"
    INCREMENTAL = "incremental"  # the commits since the last reviewed head
    UP_TO_DATE = "up-to-date"  # nothing new since the last reviewed head
    SUPERSEDED = "superseded"  # a newer push arrived: nothing posted
    PAUSED = "paused"  # a member paused reviews of this MR/PR
