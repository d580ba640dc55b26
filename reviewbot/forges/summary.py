"""The body of the one summary note per merge/pull request (pure: data in, markdown out)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace

from reviewbot.diff import ChangeSet, Side
from reviewbot.findings import Finding, Severity
from reviewbot.forges.base import ChangeRequest
from reviewbot.forges.markers import SummaryMarker, summary_marker, without_marker
from reviewbot.modeltext import code, inline, prose
from reviewbot.rendering import dismissed_lines, issue_lines, list_item
from reviewbot.result import ReviewResult, RunMode
from reviewbot.withheld import DISMISSED, DropStage, HeldTo

TITLE = "### reviewbot review"
_MAX_ITEMS = 200  # beyond this the list is cut, and says so
MAX_BODY = 60_000  # GitHub allows 65,536 characters per comment, GitLab 1,000,000
_MAX_CARRIED = 30  # unanchored findings remembered in the marker for incremental re-runs


@dataclass(frozen=True)
class SummaryInput:
    request: ChangeRequest
    result: ReviewResult
    mode: RunMode  # full | incremental (what this run did)
    since_sha: str | None
    posted: int
    already_posted: int
    resolved: int
    unanchored: list[Finding] = field(default_factory=list)
    listed: list[Finding] = field(default_factory=list)  # kept, but not worth a thread
    failed: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    complete: bool = True
    last_reviewed_sha: str | None = None
    max_chars: int = MAX_BODY
    paused: bool = False
    project_line: str = ""  # what became of the project's findings lately (service.Memory)
    waiting: list[Finding] = field(default_factory=list)  # drafts until a member's `publish`
    author_resolved: int = 0  # threads only the change's author resolved: still counted


PAUSED = ("> **Automatic reviews are paused**: a project member asked for it. Mention the bot "
          "with `resume` to turn them back on, or `review` for one review now.")


WAITING = ("> **Waiting for approval**: the findings below are drafts only the bot can see. "
           "A project member posts them with `publish` after a mention of the bot.")
PUBLISHED = "> **Published** at a project member's request."


def published_summary(previous: str | None) -> str:
    """The summary note once its waiting findings were published: that part gives way to a
    line saying so, everything else kept."""
    state = summary_marker(previous) or SummaryMarker()
    body = without_marker(previous or TITLE).replace("\n\n" + PAUSED, "")
    body = body.split("\n\n" + WAITING, 1)[0].rstrip() + "\n\n" + PUBLISHED
    return body + ("\n\n" + PAUSED if state.paused else "") + "\n\n" + state.render()


def paused_summary(previous: str | None, paused: bool) -> str:
    """The summary note with the pause switched on or off, everything else kept."""
    state = summary_marker(previous) or SummaryMarker()
    body = without_marker(previous or TITLE).replace("\n\n" + PAUSED, "").rstrip()
    body += ("\n\n" + PAUSED) if paused else ""
    return body + "\n\n" + replace(state, paused=paused).render()


def failed_summary(previous: str | None, reason: str) -> str:
    """The summary note of a review the listener gave up on: not reviewed, and why; the bot's
    state (the last head reviewed, the pause) is kept for the next attempt."""
    state = summary_marker(previous) or SummaryMarker()
    return (f"{TITLE}\n\n❌ **Not reviewed**: {inline(reason[:500])}\n\nThe review was retried "
            "and failed each time. A new push, or a member's `review` after a mention, tries "
            "again.\n\n" + state.render())


def render_summary(s: SummaryInput) -> str:
    parts = [TITLE, "", _status(s), "", *_scope(s), "", *_counts(s)]
    if s.result.summary.strip():
        parts += ["", prose(s.result.summary.strip())]
    parts += issue_lines(s.result.issues)
    parts += _skipped(s)
    if s.author_resolved:
        parts += ["", (f"**{s.author_resolved} finding(s) resolved by the author, still counted**: "
                  "the gate is the team's; a member other than the author closes a finding "
                  "(resolve its thread, `ignore` after a mention of the bot, or a thumbs-down).")]
    parts += dismissed_lines(s.result.scanner_dismissed)
    parts += _findings("Findings not posted as threads" + _why(s), s.listed)
    parts += _findings("Findings not attached to a line", s.unanchored)
    parts += _findings("Findings not posted (will be retried on the next run)", s.failed)
    if s.errors:
        parts += ["", "**Errors**", *[f"- {inline(e)}" for e in s.errors[:20]]]
    if s.waiting:  # last but the pause: `publish` replaces it (published_summary)
        parts += ["", WAITING, *_findings("Findings waiting to be published", s.waiting)]
    if s.paused:
        parts += ["", PAUSED]
    state = SummaryMarker(s.last_reviewed_sha, pack(s.unanchored) if s.unanchored else None,
                          s.paused)
    body = "\n".join(parts)
    tail = "\n\n" + state.render()
    if len(tail) > s.max_chars // 3:  # the marker must never crowd out the summary itself
        tail = "\n\n" + SummaryMarker(s.last_reviewed_sha, paused=s.paused).render()
    if len(body) + len(tail) > s.max_chars:
        body = body[: s.max_chars - len(tail) - 40] + "\n\n… (summary cut to fit the note limit)"
    return body + tail


def _status(s: SummaryInput) -> str:
    status = ("**Review complete.**" if s.complete else
              "**Review incomplete**: parts of this change were not reviewed or not posted "
              "(see below).")
    if s.result.stats.cut_note():
        status += f"\n\n> **{s.result.stats.cut_note()}.**"
    unreviewed = [k for k in s.result.stats.files_skipped if k.source]
    if unreviewed:  # skips the change itself can trigger must not hide in a list at the end
        status += (f"\n\n> **{len(unreviewed)} changed source file(s) were not reviewed**: "
                   + ", ".join(code(k.path) for k in unreviewed[:10])
                   + (" …" if len(unreviewed) > 10 else "") + " (reasons under Skipped files).")
    return status


def _scope(s: SummaryInput) -> list[str]:
    r, st = s.request, s.result.stats
    server = code(s.result.model or "unknown model")  # never the server's URL: it is internal
    if s.mode is RunMode.INCREMENTAL and s.since_sha:
        what = f"the commits since `{s.since_sha[:12]}` up to `{r.head_sha[:12]}`"
    else:
        what = f"the whole change up to `{r.head_sha[:12]}`"
    lines = [
        f"- Model: {server}",
        f"- Reviewed: {what} ({s.mode} mode)",
        f"- Files: {st.files_reviewed} reviewed of {st.files_total}, {len(st.files_skipped)} skipped",
    ]
    if st.changed_lines:
        skipped = f" ({note})" if (note := st.skipped_note()) else ""
        lines.append(f"- Changed lines sent to the model: {st.changed_lines_sent} of "
                     f"{st.changed_lines}{skipped}")
    if s.project_line:
        lines.append(f"- This project: {s.project_line}")
    if st.learnings_applied:
        lines.append(f"- Learnings of this project applied: {st.learnings_applied} (from "
                     "findings its members dismissed)")
    return lines


def _counts(s: SummaryInput) -> list[str]:
    everything = s.result.findings
    by = {sev: sum(1 for f in everything if f.severity == sev) for sev in Severity}
    row = ", ".join(f"{by[sev]} {sev.label}" for sev in sorted(Severity, reverse=True))
    return [
        f"**Findings**: {len(everything)} ({row})",
        (f"- {'Drafted, waiting for approval' if s.waiting else 'Posted now'}: {s.posted}; "
         f"already posted earlier: {s.already_posted}; "
         f"outdated threads resolved: {s.resolved}"),
        *_held_back(s.result),
    ]


def _why(s: SummaryInput) -> str:
    """`(3 below inline_min_severity major, 1 beyond max_inline_comments 10)`."""
    listed = {f.fingerprint for f in s.listed}
    reasons = Counter(h.reason for h in s.result.held if h.fingerprint in listed)
    return f" ({', '.join(f'{n} {why}' for why, n in reasons.items())})" if reasons else ""


_DROPPED = {DropStage.VERIFY: "dropped by verification",
            DropStage.AGREEMENT: "too few samples agreed on",
            DropStage.RESTATED: "that restated the change's own comments or notes"}


def _held_back(result: ReviewResult) -> list[str]:
    """What the floor and the verifier kept out of the note, counted (the CLI's JSON output
    lists each one with its reason)."""
    dismissed = sum(1 for h in result.held if h.reason == DISMISSED)
    low = sum(1 for h in result.held if h.to is HeldTo.NONE) - dismissed
    by_stage = Counter(d.stage for d in result.dropped)
    parts = [f"{low} below min_confidence"] if low else []
    if dismissed:
        parts.append(f"{dismissed} a project member dismissed earlier on this change (matched "
                     "by file, category and title)")
    parts += [f"{by_stage[stage]} candidate(s) {what}" for stage, what in _DROPPED.items()
              if by_stage[stage]]
    return [f"- Held back: {'; '.join(parts)}"] if parts else []


def _skipped(s: SummaryInput) -> list[str]:
    skipped = s.result.stats.files_skipped
    if not skipped:
        return []
    out = ["", f"**Skipped files** ({len(skipped)})"]
    out += [f"- {code(k.path)}: {inline(k.reason)}" for k in skipped[:_MAX_ITEMS]]
    if len(skipped) > _MAX_ITEMS:
        out.append(f"- … and {len(skipped) - _MAX_ITEMS} more")
    return out


def _findings(title: str, findings: list[Finding]) -> list[str]:
    if not findings:
        return []
    out = ["", f"**{title}** ({len(findings)})"]
    for f in findings[:_MAX_ITEMS]:
        out += list_item(f)
    if len(findings) > _MAX_ITEMS:
        out.append(f"- … and {len(findings) - _MAX_ITEMS} more")
    return out


def pack(findings: list[Finding]) -> str:
    """Unanchored findings as compact JSON, for the summary marker (bounded in size)."""
    items = [
        {"path": f.path, "line": f.line, "side": f.side.value, "severity": f.severity.label,
         "category": f.category[:40], "title": f.title[:120], "body": f.body[:160],
         "fingerprint": f.fingerprint}
        for f in findings[:_MAX_CARRIED]
    ]
    return json.dumps(items, separators=(",", ":"))


def unpack(text: str | None) -> list[Finding]:
    """The findings `pack` wrote; anything malformed is ignored (the marker is user-editable)."""
    try:
        items = json.loads(text or "[]")
        return [
            Finding(path=str(i["path"]), line=i["line"] if isinstance(i["line"], int) else None,
                    side=Side(i["side"]), severity=Severity.parse(i["severity"]),
                    title=str(i["title"]), body=str(i["body"]), category=str(i["category"]),
                    fingerprint=str(i["fingerprint"]))
            for i in items
        ]
    except (ValueError, KeyError, TypeError):
        return []


def carried(packed: str | None, changes: ChangeSet, now: list[Finding]) -> list[Finding]:
    """Unanchored findings of earlier runs on files this incremental review did not touch."""
    touched = {p for f in changes.files for p in (f.old_path, f.new_path) if p}
    known = {f.fingerprint for f in now}
    return [f for f in unpack(packed) if f.path not in touched and f.fingerprint not in known]
