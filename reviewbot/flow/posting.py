"""The forge-agnostic posting flow: fetch → review → de-duplicate → post → resolve → summary.

It receives a Forge and a reviewer and never looks anything up. Where a finding may go is
decided by `reviewbot.anchoring` over the parsed diff; the host modules only translate placed
findings into their own formats.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from reviewbot import anchoring
from reviewbot.choices import ReviewMode
from reviewbot.diff import ChangeSet
from reviewbot.errors import ForgeError
from reviewbot.findings import Finding, merge, topic, with_fingerprints
from reviewbot.flow import gathering
from reviewbot.flow.headtree import Trees
from reviewbot.flow.outdated import outdated
from reviewbot.forges.base import (
    ChangeRequest,
    CommentLimit,
    Forge,
    PostedComment,
    PostOutcome,
    Previewer,
    Resolver,
    still_open,
)
from reviewbot.forges.markers import SummaryMarker, summary_marker
from reviewbot.forges.summary import MAX_BODY, SummaryInput, carried, render_summary, unpack
from reviewbot.history import Change, ReviewOutcome, ReviewRecord
from reviewbot.redact import redact
from reviewbot.result import Reviewer, ReviewResult, RunMode, Stats, exit_code
from reviewbot.withheld import DISMISSED, HeldTo, unreviewed_error

log = logging.getLogger(__name__)
NO_ARCHIVE = Trees(None, 0, fetch=False)  # a local clone, else the forge's files one by one



@dataclass
class ForgeRun:
    request: ChangeRequest
    result: ReviewResult
    mode: RunMode
    since_sha: str | None = None
    to_post: list[Finding] = field(default_factory=list)
    already_posted: list[Finding] = field(default_factory=list)
    unanchored: list[Finding] = field(default_factory=list)  # findings for the summary
    listed: list[Finding] = field(default_factory=list)  # below the inline floor or cap
    to_resolve: list[PostedComment] = field(default_factory=list)
    existing: list[PostedComment] = field(default_factory=list)  # the bot's, before this run
    outcome: PostOutcome = field(default_factory=PostOutcome)
    summary: str = ""
    payloads: list[dict[str, object]] = field(default_factory=list)  # dry run, when previewable
    dry_run: bool = False
    errors: list[str] = field(default_factory=list)
    author_may_dismiss: bool = False  # the author's resolve closes a finding for the gate
    hold: bool = False  # the findings wait as drafts until a member's `publish`

    @property
    def complete(self) -> bool:
        return self.result.complete and not self.errors and not self.outcome.failed

    @property
    def exit_code(self) -> int:
        """Without a fail_on threshold: 3 when incomplete, else 0."""
        return exit_code(self.complete, None, "never")

    @property
    def notice(self) -> str:
        """What a report of the findings does not say: a pause, and what a dry run held back."""
        if self.mode is RunMode.PAUSED:
            return ("a project member paused reviews of this merge request (mention the bot "
                    "with `resume`); nothing was reviewed, which is not a pass (exit 3)")
        if self.dry_run and self.mode is not RunMode.UP_TO_DATE:
            return (f"dry run, nothing was posted: {len(self.to_post)} comment(s) would be "
                    f"posted and {len(self.to_resolve)} thread(s) resolved; the summary note "
                    f"would read:\n\n{self.summary}\n")
        return ""

    def record(self, source: str, started: float) -> ReviewRecord:
        """What the history keeps of this attempt (`source`: who ran it)."""
        r = self.request
        change = Change(r.forge, r.project, r.number, r.head_sha, r.web_url, r.title)
        if self.mode is RunMode.SUPERSEDED:
            outcome, reason = ReviewOutcome.INCOMPLETE, "a newer push arrived: nothing was posted"
        elif self.complete:
            outcome, reason = ReviewOutcome.COMPLETE, ""
        else:
            outcome = ReviewOutcome.INCOMPLETE
            reason = "; ".join(self.errors + self.result.stats.errors) \
                or "the review did not cover the whole change"
        return ReviewRecord.of(change, source, self.mode.value, started, outcome, redact(reason),
                               self.result, len(self.outcome.posted), len(self.result.held))

    def to_dict(self) -> dict[str, object]:
        return {
            "forge": self.request.forge,
            "project": self.request.project,
            "number": self.request.number,
            "head_sha": self.request.head_sha,
            "mode": self.mode,
            "since_sha": self.since_sha,
            "dry_run": self.dry_run,
            "complete": self.complete,
            "to_post": [f.to_dict() for f in self.to_post],
            "payloads": self.payloads,
            "already_posted": [f.fingerprint for f in self.already_posted],
            "posted": [f.fingerprint for f in self.outcome.posted],
            "unanchored": [f.to_dict() for f in self.unanchored],
            "listed": [f.fingerprint for f in self.listed],
            "failed": [f.fingerprint for f in self.outcome.failed],
            "to_resolve": [c.thread_id or c.id for c in self.to_resolve],
            "summary": self.summary,
            "stats": self.result.stats.to_dict(),
            "errors": list(self.errors),
        }


def review_change_request(
    forge: Forge, reviewer: Reviewer, *, mode: ReviewMode = ReviewMode.INCREMENTAL,
    dry_run: bool = False,
    cancel: threading.Event | None = None, fail_on_skipped: bool = False, force: bool = False,
    trees: Trees | None = None, project_line: str = "", linked_issues: bool = True,
    author_may_dismiss: bool = False, hold: bool = False,
) -> ForgeRun:
    """Review and post. A set `cancel` (a newer push arrived) stops before anything is posted;
    a merge request a member paused is not reviewed unless `force` (the `review` command)."""
    request = forge.fetch()
    previous = summary_marker(forge.read_summary()) or SummaryMarker()
    if previous.paused and not force:  # never a clean pass: the gate did not look
        return ForgeRun(request, _paused_result(forge, previous, author_may_dismiss),
                        RunMode.PAUSED, dry_run=dry_run)
    last_sha = previous.last_reviewed_sha
    if mode is ReviewMode.INCREMENTAL and last_sha == request.head_sha:
        return ForgeRun(request, _empty_result(forge, previous, author_may_dismiss),
                        RunMode.UP_TO_DATE, last_sha,
                        dry_run=dry_run)
    changes, used_mode, since = request.changes, RunMode.FULL, None
    if mode is ReviewMode.INCREMENTAL and last_sha:
        incremental = forge.fetch_incremental(last_sha, request)
        if incremental is not None:
            changes, used_mode, since = incremental, RunMode.INCREMENTAL, last_sha
    started = time.monotonic()
    result = reviewer(changes, gathering.for_forge(forge, request, trees or NO_ARCHIVE,
                                                   linked_issues))
    # the head tree (an archive's download and unpacking) is part of the review's time
    result.stats.wall_seconds = max(result.stats.wall_seconds, time.monotonic() - started)
    _add_skipped(result.stats, request)
    if fail_on_skipped:  # what the forge withheld (the engine reports its own skips)
        result.stats.errors += unreviewed_error([s for s in request.skipped if s.source])
    if cancel is not None and cancel.is_set():  # superseded: posting would be stale
        return ForgeRun(request, result, RunMode.SUPERSEDED, since, dry_run=dry_run)
    run = ForgeRun(request, result, used_mode, since, dry_run=dry_run,
                   author_may_dismiss=author_may_dismiss, hold=hold)
    _plan(forge, run, changes, previous)
    _deliver(forge, run)
    run.unanchored += run.outcome.moved_to_summary
    limit = forge.max_comment_chars if isinstance(forge, CommentLimit) else MAX_BODY
    run.summary = render_summary(_summary_input(run, previous, limit, project_line))
    if not dry_run:
        try:
            forge.write_summary(request, run.summary)
        except ForgeError as exc:
            run.errors.append(f"writing the summary failed: {exc}")
    return run


def _plan(forge: Forge, run: ForgeRun, changes: ChangeSet, previous: SummaryMarker) -> None:
    """Decide what to post, what is already there, what to resolve and what stays open."""
    result, since = run.result, run.since_sha
    current = merge(with_fingerprints(result.findings, changes))
    existing = run.existing = forge.existing()
    # a finding a member dismissed on this change stays dismissed, also after it moved
    dismissed = {c.topic() for c in existing if c.dismissed}
    result.hold_back([f.fingerprint for f in current
                      if topic(f.path, f.category, f.title) in dismissed], DISMISSED)
    # incremental: old-side numbers refer to the previous head, not to the MR's base
    anchored, refused = anchoring.split(current, run.request.changes,
                                        new_side_only=since is not None)
    held = {h.fingerprint: h.to for h in result.held}  # noise control (reviewbot.engine.noise)
    run.unanchored = [f for f in refused if held.get(f.fingerprint) is not HeldTo.NONE]
    run.listed = [f for f in anchored if held.get(f.fingerprint) is HeldTo.SUMMARY]
    # what earlier reviews could not anchor, on code not reviewed again
    kept = carried(previous.unanchored, changes, current + run.unanchored) if since else []
    run.unanchored += kept
    known = {c.fingerprint for c in existing}
    run.to_post = [f for f in anchored if f.fingerprint not in known | held.keys()]
    run.already_posted = [f for f in anchored if f.fingerprint in known]
    seen = {f.fingerprint for f in current}
    run.to_resolve = outdated(existing, seen, changes, run.request, since_sha=since)
    closing = {c.id for c in run.to_resolve}
    result.earlier = still_open([c for c in existing if c.id not in closing],
                                seen - result.hidden(), run.author_may_dismiss) + kept


def _deliver(forge: Forge, run: ForgeRun) -> None:
    """Post the new findings and resolve the gone ones (with dry_run: only what would be sent)."""
    if run.dry_run:
        run.outcome = PostOutcome(posted=list(run.to_post))
        if isinstance(forge, Previewer):
            run.payloads = forge.preview(run.request, run.to_post)
        return
    run.outcome = _post(forge, run.request, run.to_post, run.hold)
    run.errors.extend(run.outcome.errors)
    if run.to_resolve and isinstance(forge, Resolver):
        try:
            forge.resolve(run.to_resolve)
        except ForgeError as exc:
            run.errors.append(f"resolving outdated threads failed: {exc}")


def _post(forge: Forge, request: ChangeRequest, findings: list[Finding],
          hold: bool) -> PostOutcome:
    if not findings:
        return PostOutcome()
    try:
        return forge.post(request, findings, hold)
    except ForgeError as exc:
        return PostOutcome(failed=list(findings), errors=[f"posting failed: {exc}"])


def _summary_input(run: ForgeRun, previous: SummaryMarker, max_chars: int,
                   project_line: str) -> SummaryInput:
    """Everything the summary note says, gathered once (reviewbot.forges.summary renders it)."""
    complete = run.complete
    return SummaryInput(
        request=run.request,
        result=run.result,
        mode=run.mode,
        since_sha=run.since_sha,
        posted=len(run.outcome.posted),
        already_posted=len(run.already_posted),
        resolved=len(run.to_resolve),
        unanchored=run.unanchored,
        listed=run.listed,
        failed=run.outcome.failed,
        errors=run.errors,
        complete=complete,
        # an incomplete run keeps the last good point, so the next run covers what this one missed
        last_reviewed_sha=run.request.head_sha if complete else previous.last_reviewed_sha,
        max_chars=max_chars,
        waiting=run.outcome.posted if run.outcome.waiting else [],
        author_resolved=sum(1 for c in run.existing
                            if c.counted_though_resolved(run.author_may_dismiss)),
        paused=previous.paused,
        project_line=project_line,
    )


def _empty_result(forge: Forge, previous: SummaryMarker,
                  author_may_dismiss: bool = False) -> ReviewResult:
    """Nothing new to review: the verdict is what is still open on the change."""
    earlier = still_open(forge.existing(), set(), author_may_dismiss) + unpack(previous.unanchored)
    return ReviewResult(findings=[], summary="", stats=Stats(), earlier=earlier)


def _paused_result(forge: Forge, previous: SummaryMarker,
                   author_may_dismiss: bool = False) -> ReviewResult:
    result = _empty_result(forge, previous, author_may_dismiss)
    result.stats.errors.append("a project member paused reviews of this change (`resume` "
                               "turns them back on): not reviewed")
    result.summary = "INCOMPLETE REVIEW: paused; nothing was reviewed"
    return result


def _add_skipped(stats: Stats, request: ChangeRequest) -> None:
    known = {s.path for s in stats.files_skipped}
    for skipped in request.skipped:
        if skipped.path not in known:
            stats.files_skipped.append(skipped)
            known.add(skipped.path)
