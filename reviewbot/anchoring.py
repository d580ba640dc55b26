"""Where a finding may be placed: every rule, once, over the parsed diff (pure functions).

- A finding names a row of the rendered diff; a row outside its chunk is moved to the nearest
  shown row of the chunk (and then loses its range).
- A range stays inside one hunk, on one side, and ends after it starts; otherwise it is
  narrowed to its first line, and its suggestion dropped (it would replace the wrong lines).
- Suggestions only on the new side: no forge applies one to removed lines.
- After an incremental review, old-side line numbers refer to the previously reviewed head,
  not to the change's base that the forges' old side means: such findings are not placed.

Forge adapters receive only placed findings and translate them into their own position format.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reviewbot.diff import ChangeSet, DiffLine, FileDiff, Hunk, Side
from reviewbot.findings import Finding


@dataclass(frozen=True)
class Row:
    """Where a row of the rendered diff sits: a comment on it lands on (path, side, line)."""

    file: FileDiff
    hunk: Hunk
    line: DiffLine

    @property
    def side(self) -> Side:
        return Side.OLD if self.line.kind == "-" else Side.NEW

    @property
    def number(self) -> int:
        n = self.line.old if self.line.kind == "-" else self.line.new
        assert n is not None
        return n


@dataclass(frozen=True)
class RowAnchor:
    row: Row  # where the finding lands
    end_line: int | None  # last line of its range (same hunk and side), if any
    moved: bool  # the model named a row this chunk does not show


def at_row(rows: dict[int, Row], row: int, end_row: object) -> RowAnchor:
    """The anchor for a finding the model put on `row` (..`end_row`) of a chunk showing `rows`."""
    anchored = row if row in rows else min(rows, key=lambda r: (abs(r - row), r))
    at = rows[anchored]
    end = rows.get(end_row) if isinstance(end_row, int) and not isinstance(end_row, bool) else None
    end_line = None
    if (end is not None and anchored == row and end.hunk is at.hunk and end.side is at.side
            and end.number > at.number):
        end_line = end.number
    return RowAnchor(at, end_line, anchored != row)


def place(f: Finding, changes: ChangeSet, *, new_side_only: bool = False) -> Finding | None:
    """`f` narrowed to a position that `changes` can carry, or None when it has none."""
    file = changes.file(f.path)
    if (file is None or f.line is None or file.binary or (new_side_only and f.side is Side.OLD)
            or (f.side, f.line) not in file.commentable):
        return None
    return _narrow(f, file)


def split(findings: list[Finding], changes: ChangeSet, *,
          new_side_only: bool = False) -> tuple[list[Finding], list[Finding]]:
    """(placed findings, findings that belong in the summary)."""
    placed: list[Finding] = []
    refused: list[Finding] = []
    for f in findings:
        p = place(f, changes, new_side_only=new_side_only)
        if p is None:
            refused.append(f)
        else:
            placed.append(p)
    return placed, refused


def _narrow(f: Finding, file: FileDiff) -> Finding:
    assert f.line is not None
    end = f.end_line
    if end is not None and end != f.line:
        valid = (end > f.line and (f.side, end) in file.commentable
                 and file.hunk_at(f.side, f.line) is file.hunk_at(f.side, end))
        if not valid:
            f = replace(f, end_line=None, suggestion=None)
    elif end is not None:
        f = replace(f, end_line=None)
    if f.suggestion is not None and f.side is Side.OLD:
        f = replace(f, suggestion=None)
    return replace(f, path=file.path)
