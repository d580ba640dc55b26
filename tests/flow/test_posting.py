"""The forge-agnostic flow in run.py, over an in-memory forge (a real implementation of the
protocol that keeps comments in lists) and the local forge."""

from __future__ import annotations

import io
from dataclasses import dataclass, field, replace

from reviewbot.choices import ReviewMode
from reviewbot.diff import ChangeSet, Side, parse
from reviewbot.errors import ForgeError
from reviewbot.findings import Finding, Severity
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.base import ChangeRequest, PostedComment, PostOutcome
from reviewbot.forges.markers import SummaryMarker, decode
from reviewbot.result import ReviewResult, Stats
from reviewbot.withheld import SkippedFile
from tests.forges.gitlab_support import sha_marker
from tests.forges.local import LocalForge

DIFF = """\
--- a/app.py
+++ b/app.py
@@ -1,4 +1,5 @@
 one
-two
+TWO
+two and a half
 three
 four
@@ -20,3 +21,3 @@
 twenty
-twenty-one
+XXI
 twenty-two
"""
CHANGES = parse(DIFF)


def f(line: int | None, side: Side = Side.NEW, end: int | None = None, path: str = "app.py",
      suggestion: str | None = None, title: str = "t") -> Finding:
    return Finding(path, line, side, Severity.MINOR, f"{title}{line}{side.value}{end}", "b",
                   end_line=end, suggestion=suggestion)


@dataclass
class MemoryForge:
    """Keeps everything in lists; `fail_post` makes post() raise like a dead forge."""

    changes: ChangeSet = CHANGES
    head: str = "h2"
    incremental: ChangeSet | None = None
    skipped: tuple[SkippedFile, ...] = ()
    summary: str | None = None
    comments: list[PostedComment] = field(default_factory=list)
    posted: list[Finding] = field(default_factory=list)
    resolved: list[PostedComment] = field(default_factory=list)
    writes: int = 0
    fail_post: bool = False
    name: str = "memory"

    def fetch(self) -> ChangeRequest:
        return ChangeRequest("memory", "p", 1, "t", self.head, "b", "b", self.changes, self.skipped)

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        return self.incremental

    def existing(self) -> list[PostedComment]:
        return list(self.comments)

    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        self.writes += 1
        if self.fail_post:
            raise ForgeError("forge down")
        self.posted += findings
        self.comments += [PostedComment(str(len(self.comments)), x.fingerprint, x.path)
                          for x in findings]
        return PostOutcome(posted=list(findings))

    def resolve(self, comments: list[PostedComment]) -> None:
        self.writes += 1
        self.resolved += comments

    def read_summary(self) -> str | None:
        return self.summary

    def target_file(self, path: str) -> str | None:
        return None

    def write_summary(self, request: ChangeRequest, body: str) -> None:
        self.writes += 1
        self.summary = body


def reviewer_of(*findings: Finding, complete: bool = True):  # type: ignore[no-untyped-def]
    def review(changes: ChangeSet, intent: object = None) -> ReviewResult:
        n = changes.changed_lines
        stats = Stats(files_total=1, files_reviewed=1, changed_lines=n,
                      changed_lines_sent=n if complete else 0)
        return ReviewResult(list(findings), "", stats, model="m")
    return review


def test_full_flow_posts_new_findings_only_and_records_the_head() -> None:
    forge = MemoryForge(comments=[PostedComment("9", "", "app.py")])
    first = review_change_request(forge, reviewer_of(f(2), f(2, Side.OLD)), mode=ReviewMode.FULL)
    assert first.exit_code == 0 and len(forge.posted) == 2
    again = review_change_request(forge, reviewer_of(f(2), f(2, Side.OLD)), mode=ReviewMode.FULL)
    assert again.to_post == [] and len(forge.posted) == 2
    assert sha_marker(forge.summary or "") == {"kind": "summary", "last_reviewed_sha": "h2"}


def test_incremental_uses_the_incremental_diff_and_falls_back_to_full() -> None:
    forge = MemoryForge(summary=SummaryMarker("h1").render())
    seen: list[ChangeSet] = []

    def review(changes: ChangeSet, intent: object = None) -> ReviewResult:
        seen.append(changes)
        return reviewer_of()(changes)

    run = review_change_request(forge, review)
    assert run.mode == "full" and seen[-1] is CHANGES  # fetch_incremental gave None
    forge.summary = SummaryMarker("h1").render()
    forge.incremental = ChangeSet(CHANGES.files[:1])
    run = review_change_request(forge, review)
    assert run.mode == "incremental" and run.since_sha == "h1" and seen[-1] is forge.incremental


def test_a_forge_failure_is_exit_3_with_everything_in_the_summary_and_the_old_sha_kept() -> None:
    forge = MemoryForge(summary=SummaryMarker("h1").render(), fail_post=True,
                        incremental=CHANGES)
    run = review_change_request(forge, reviewer_of(f(2, title="lost?")))
    assert run.exit_code == 3 and not run.complete
    assert "Review incomplete" in (forge.summary or "") and "lost?2" in (forge.summary or "")
    assert sha_marker(forge.summary or "") == {"kind": "summary", "last_reviewed_sha": "h1"}


def test_an_incomplete_review_is_exit_3_and_records_no_new_sha() -> None:
    forge = MemoryForge()
    run = review_change_request(forge, reviewer_of(f(2), complete=False), mode=ReviewMode.FULL)
    assert run.exit_code == 3 and sha_marker(forge.summary or "") == {"kind": "summary"}


def test_forge_skipped_files_reach_the_stats_and_the_summary() -> None:
    forge = MemoryForge(skipped=(SkippedFile("huge.sql", "GitLab did not return the diff"),))
    run = review_change_request(forge, reviewer_of(), mode=ReviewMode.FULL)
    assert [s.path for s in run.result.stats.files_skipped] == ["huge.sql"]
    assert "`huge.sql`: GitLab did not return the diff" in run.summary


def test_dry_run_writes_nothing() -> None:
    forge = MemoryForge()
    run = review_change_request(forge, reviewer_of(f(2), f(60)), mode=ReviewMode.FULL, dry_run=True)
    assert forge.writes == 0 and forge.summary is None
    assert [x.line for x in run.to_post] == [2] and [x.line for x in run.unanchored] == [60]
    assert run.outcome.posted == run.to_post and run.summary


def test_resolves_through_the_resolver_protocol() -> None:
    forge = MemoryForge(comments=[PostedComment("1", "stale", "app.py", thread_id="t1")])
    run = review_change_request(forge, reviewer_of(f(2)), mode=ReviewMode.FULL)
    assert [c.thread_id for c in forge.resolved] == ["t1"] and run.to_resolve == forge.resolved


def test_local_forge_prints_comments_and_summary() -> None:
    out = io.StringIO()
    run = review_change_request(LocalForge(CHANGES, head_sha="abc", out=out),
                                reviewer_of(replace(f(2, end=3), suggestion="fixed")))
    text = out.getvalue()
    assert "app.py:2-3 (new) [minor]" in text and "fixed" in text and "### reviewbot review" in text
    assert run.exit_code == 0


def test_summary_stays_under_the_limit_and_keeps_its_marker() -> None:
    from reviewbot.forges.summary import SummaryInput, render_summary, unpack

    many = [f(1000 + i, title="x" * 500) for i in range(400)]
    result = ReviewResult([], "", Stats(), model="m")
    body = render_summary(SummaryInput(MemoryForge().fetch(), result, "full", None, 0, 0, 0,
                                       unanchored=many, last_reviewed_sha="h2"))
    assert len(body) <= 60_000 and sha_marker(body) == {"kind": "summary",
                                                        "last_reviewed_sha": "h2"}
    carried = unpack(decode(body)["unanchored"])  # type: ignore[index]
    assert 0 < len(carried) <= 30 and carried[0].path == "app.py"
    assert unpack("not json") == [] and unpack('[{"path": 1}]') == []


def test_incremental_old_side_findings_go_to_the_summary_not_to_a_wrong_line() -> None:
    # line 2 of the old side exists in the MR diff too, but in an incremental review the old
    # side is the previous head: posting there would point at different code
    forge = MemoryForge(summary=SummaryMarker("h1").render(), incremental=CHANGES)
    run = review_change_request(forge, reviewer_of(f(2), f(2, Side.OLD)))
    assert [(x.line, x.side) for x in run.to_post] == [(2, Side.NEW)]
    assert [(x.line, x.side) for x in run.unanchored] == [(2, Side.OLD)]


def test_a_review_superseded_while_running_posts_nothing() -> None:
    import threading

    forge = MemoryForge()
    cancel = threading.Event()

    def reviewer(changes: ChangeSet, intent: object = None) -> ReviewResult:
        cancel.set()  # a newer push arrives while the model is working
        return reviewer_of(f(2))(changes)

    run = review_change_request(forge, reviewer, mode=ReviewMode.FULL, cancel=cancel)
    assert run.mode == "superseded"
    assert forge.writes == 0 and forge.posted == [] and forge.summary is None


def test_a_run_is_recorded_with_its_outcome_its_counts_and_why_it_fell_short() -> None:
    from reviewbot.history import ReviewOutcome
    from reviewbot.result import RunMode

    forge = MemoryForge()
    done = review_change_request(forge, reviewer_of(f(2)), mode=ReviewMode.FULL)
    row = done.record("cli", started=1.0)
    assert (row.outcome, row.mode, row.source, row.findings_posted) == (
        ReviewOutcome.COMPLETE, "full", "cli", 1)
    assert (row.project, row.number, row.head_sha, row.reason) == ("p", 1, "h2", "")
    short = review_change_request(MemoryForge(), reviewer_of(complete=False), mode=ReviewMode.FULL)
    assert short.record("listener", 1.0).outcome is ReviewOutcome.INCOMPLETE
    assert short.record("listener", 1.0).reason == "the review did not cover the whole change"
    superseded = replace(done, mode=RunMode.SUPERSEDED)
    assert superseded.record("listener", 1.0).reason == "a newer push arrived: nothing was posted"
