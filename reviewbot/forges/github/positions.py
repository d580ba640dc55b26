"""Pure translations between reviewbot's diff model and GitHub's wire formats.

- `review_comment`: a Finding → one entry of a review's `comments[]` (`path`, `line`, `side`,
  `start_line`/`start_side`), or None when GitHub could not anchor it. `side` is RIGHT for added
  and context lines (new-file numbers), LEFT for removed lines (old-file numbers); a range ends
  at `line` and starts at `start_line` in the same hunk. Suggestions only on RIGHT.
- `posted_comment`: a review comment from GitHub → PostedComment, via its hidden marker.
- `fit_comment`: a body cut to GitHub's 65,536 characters, keeping its trailing marker.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from reviewbot import anchoring
from reviewbot.diff import ChangeSet, Side
from reviewbot.findings import Finding
from reviewbot.forges.base import PostedComment
from reviewbot.forges.markers import PREFIX, FindingMarker, finding_marker, without_marker
from reviewbot.rendering import comment, suggestion_block

SIDES = {Side.NEW: "RIGHT", Side.OLD: "LEFT"}


def review_comment(f: Finding, changes: ChangeSet) -> dict[str, Any] | None:
    """The `comments[]` entry for `f`, or None if (path, side, line) is not a line of the diff."""
    placed = anchoring.place(f, changes)
    file = changes.file(f.path)
    if placed is None or file is None or file.submodule or placed.line is None:
        return None
    f = placed
    side = SIDES[f.side]
    end = f.end_line
    suggestion = suggestion_block(f.suggestion) if f.suggestion is not None else ""
    out: dict[str, Any] = {"path": file.path, "body": comment(f, suggestion, FindingMarker.of(f).render()), "side": side}
    if end is None:
        out["line"] = f.line
    else:
        out.update(start_line=f.line, start_side=side, line=end)
    return out


def posted_comment(c: Any, dismissed: bool = False, resolved_by: str | None = None,
                   me: str = "", author: str = "") -> PostedComment | None:
    """A PullRequestComment (or anything with its attributes) → PostedComment, if it is ours;
    `resolved_by`: who resolved its review thread ("" unknown, None open); `author`: the pull
    request's author's login."""
    meta = finding_marker(c.body)
    if meta is None:
        return None
    side = {"RIGHT": Side.NEW, "LEFT": Side.OLD}.get(c.side or "")
    return PostedComment(
        id=str(c.id), fingerprint=meta.fingerprint, path=c.path or "", marker=meta,
        resolved=meta.outdated or resolved_by is not None, thread_id=str(c.id),
        resolved_by_person=bool(resolved_by) and resolved_by != me,
        resolved_by_author=bool(resolved_by and author)
        and (resolved_by or "").lower() == author.lower(),
        line=c.original_line, side=side, head_sha=c.original_commit_id or "", dismissed=dismissed,
    )


def outdated_body(body: str, fingerprint: str) -> str:
    """The bot's comment, struck out and re-marked as outdated (GitHub REST cannot resolve)."""
    marker = finding_marker(body) or FindingMarker(fingerprint)
    quoted = "\n".join("> " + line for line in without_marker(body).strip().split("\n"))
    return (
        "**Outdated**: reviewbot no longer reports this after the latest push.\n\n"
        f"<details><summary>Original comment</summary>\n\n{quoted}\n\n</details>\n\n"
        + replace(marker, outdated=True).render()
    )


MAX_COMMENT = 65536


def fit_comment(body: str) -> str:
    """GitHub caps a comment at 65,536 characters: cut the middle, keep the trailing marker."""
    if len(body) <= MAX_COMMENT:
        return body
    head, sep, marker = body.rpartition(PREFIX)
    tail = sep + marker if sep else ""
    note = "\n\n… (summary cut to fit GitHub's comment limit)\n\n"
    return (head if sep else body)[: MAX_COMMENT - len(tail) - len(note)] + note + tail
