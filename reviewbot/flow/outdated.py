"""Which of the bot's open threads a new review makes outdated: the finding is gone, and this
review looked again where it was."""

from __future__ import annotations

from reviewbot.diff import ChangeSet, Side
from reviewbot.forges.base import ChangeRequest, PostedComment


def outdated(
    existing: list[PostedComment],
    current: set[str],
    changes: ChangeSet,
    request: ChangeRequest,
    *,
    since_sha: str | None,
) -> list[PostedComment]:
    """The bot's open threads whose finding is gone, limited to what this review covered.

    Full mode (`since_sha` None): every reviewed file. Incremental mode: files the new commits
    touched; where the thread's anchor is known, only threads whose line the new commits
    changed, since the rest of the file was not looked at again.
    """
    skipped = {s.path for s in request.skipped}
    covered = {
        p for f in changes.files for p in (f.old_path, f.new_path) if p and f.path not in skipped
    }
    out = []
    for c in existing:
        if c.resolved or c.fingerprint in current or c.path not in covered:
            continue
        if since_sha is not None and not _anchor_changed(c, changes, since_sha):
            continue
        out.append(c)
    return out


def _anchor_changed(comment: PostedComment, changes: ChangeSet, since_sha: str) -> bool:
    if comment.line is None or comment.side is None:
        return True  # anchor unknown: the file was touched, which is all we can tell
    if comment.side is not Side.NEW or comment.head_sha != since_sha:
        return False  # its line numbers do not refer to the old side of this diff: leave it
    file = changes.file(comment.path)
    hit = file.line_at(Side.OLD, comment.line) if file is not None else None
    return hit is not None and hit.kind == "-"
