"""Findings → GitLab diff positions, line codes and suggestion blocks (pure functions).

GitLab identifies a diff line by `line_code` = `<sha1(path)>_<old>_<new>`, computed with running
counters: on an added line `<old>` is the old-side counter (the next old line), on a removed line
`<new>` is the new-side counter. A position sends `new_line` only for added lines, `old_line`
only for removed lines, and both for context lines; a multi-line finding adds `line_range` and is
anchored on its last line, as GitLab's own UI does, so its suggestion reads `-N+0`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from reviewbot.diff import DiffLine, FileDiff, Hunk, Side
from reviewbot.findings import Finding
from reviewbot.forges.base import ChangeRequest, PostedComment
from reviewbot.forges.markers import FindingMarker, finding_marker
from reviewbot.rendering import comment, suggestion_block


def line_codes(file: FileDiff) -> dict[DiffLine, tuple[int, int]]:
    """(old, new) as GitLab counts them, for every line of the file's diff."""
    out: dict[DiffLine, tuple[int, int]] = {}
    for hunk in file.hunks:
        out.update(_hunk_codes(hunk))
    return out


def _hunk_codes(hunk: Hunk) -> dict[DiffLine, tuple[int, int]]:
    old, new = hunk.old_start, hunk.new_start
    out = {}
    for line in hunk.lines:
        out[line] = (line.old if line.old is not None else old, line.new if line.new is not None else new)
        if line.kind in ("+", " "):
            new += 1
        if line.kind in ("-", " "):
            old += 1
    return out


def line_code(path: str, old: int, new: int) -> str:
    return f"{hashlib.sha1(path.encode('utf-8')).hexdigest()}_{old}_{new}"


def paths(file: FileDiff) -> tuple[str, str]:
    """(old_path, new_path) as GitLab wants them: both always set, the real old path on renames."""
    return (file.old_path or file.path, file.new_path or file.path)


def _endpoint(file: FileDiff, line: DiffLine, codes: dict[DiffLine, tuple[int, int]]) -> dict[str, Any]:
    old, new = codes[line]
    point: dict[str, Any] = {
        "line_code": line_code(paths(file)[1], old, new),
        "type": "new" if line.kind == "+" else "old",
    }
    if line.old is not None:
        point["old_line"] = line.old
    if line.new is not None:
        point["new_line"] = line.new
    return point


def position(request: ChangeRequest, file: FileDiff, f: Finding) -> dict[str, Any]:
    """The `position` of a discussion/draft note for a finding already validated against `file`."""
    assert f.line is not None
    first = file.line_at(f.side, f.line)
    last = file.line_at(f.side, f.end_line) if f.end_line else first
    if first is None or last is None:
        raise ValueError(f"{f.path}:{f.line} is not a line of the diff")
    old_path, new_path = paths(file)
    pos: dict[str, Any] = {
        "position_type": "text",
        "base_sha": request.base_sha,
        "start_sha": request.start_sha,
        "head_sha": request.head_sha,
        "old_path": old_path,
        "new_path": new_path,
    }
    if last.new is not None:
        pos["new_line"] = last.new
    if last.old is not None:
        pos["old_line"] = last.old
    if last is not first:
        codes = line_codes(file)
        pos["line_range"] = {"start": _endpoint(file, first, codes), "end": _endpoint(file, last, codes)}
    return pos


def body(file: FileDiff, f: Finding) -> str:
    """The note body; a placed finding's suggestion is on new-side lines (reviewbot.anchoring),
    anchored on its last line, so it replaces the `above` lines before that one too."""
    block = ""
    if f.suggestion is not None and f.line is not None:
        above = (f.end_line or f.line) - f.line
        block = suggestion_block(f.suggestion, f"suggestion:-{above}+0")
    return comment(f, block, FindingMarker.of(f).render())


def note_payload(request: ChangeRequest, file: FileDiff, f: Finding) -> dict[str, Any]:
    return {"body": body(file, f), "position": position(request, file, f)}


def posted_comment(note: dict[str, Any], thread_id: str, dismissed: bool, me: int | None,
                   author: int | None) -> PostedComment | None:
    """One of the bot's notes → PostedComment, if it carries a finding's marker; `me` and
    `author`: the bot's and the merge request author's user ids (who resolved it matters: only
    a member other than the author closes a finding for the gate)."""
    meta = finding_marker(note.get("body"))
    if meta is None:
        return None
    pos = note.get("position") or {}
    side = Side.NEW if pos.get("new_line") is not None else Side.OLD if pos else None
    resolved = bool(note.get("resolved"))
    by = note.get("resolved_by")
    by_id = by.get("id") if resolved and isinstance(by, dict) else None
    return PostedComment(
        id=str(note["id"]), fingerprint=meta.fingerprint, marker=meta,
        path=pos.get("new_path") or pos.get("old_path") or "", resolved=resolved,
        thread_id=thread_id, line=pos.get("new_line") if side is Side.NEW else pos.get("old_line"),
        side=side, head_sha=pos.get("head_sha") or "", dismissed=dismissed,
        resolved_by_person=by_id is not None and by_id != me,
        resolved_by_author=by_id is not None and by_id == author)
