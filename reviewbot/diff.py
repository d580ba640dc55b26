"""The change being reviewed: files → hunks → lines, and which (side, line) pairs can carry a comment.

Built on unidiff. Knows nothing about forges. Two rules keep line numbers right:
diff text is only ever split on "\\n" (never `str.splitlines()`, which also splits on "\\r",
"\\x0c", "\\u2028", …), and undecodable bytes are replaced, never dropped.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from io import StringIO

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from reviewbot.errors import ChangeTooLarge, DiffError


class Side(str, Enum):
    NEW = "new"
    OLD = "old"


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # "+", "-" or " "
    old: int | None  # line number in the old file (removed and context lines)
    new: int | None  # line number in the new file (added and context lines)
    text: str  # without the line terminator; a "\r" of a CRLF file is kept

    @property
    def changed(self) -> bool:
        return self.kind != " "

    def positions(self) -> tuple[tuple[Side, int], ...]:
        """Where a comment on this line may be anchored."""
        out = []
        if self.new is not None:
            out.append((Side.NEW, self.new))
        if self.old is not None:
            out.append((Side.OLD, self.old))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: tuple[DiffLine, ...]

    @property
    def header(self) -> str:
        section = f" {self.section}" if self.section else ""
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@{section}"

    @property
    def changed_lines(self) -> int:
        return sum(1 for line in self.lines if line.changed)


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None for an added file
    new_path: str | None  # None for a deleted file
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    submodule: bool = False
    old_mode: str | None = None
    new_mode: str | None = None

    @property
    def path(self) -> str:
        """The path a reviewer knows the file by: the new one, or the old one if deleted."""
        return self.new_path or self.old_path or ""

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        if self.old_path != self.new_path:
            return "renamed"
        if not self.hunks and self.old_mode != self.new_mode:
            return "mode-changed"
        return "modified"

    @property
    def changed_lines(self) -> int:
        return sum(h.changed_lines for h in self.hunks)

    @cached_property
    def commentable(self) -> frozenset[tuple[Side, int]]:
        """Every (side, line) a comment may be anchored to: added (new), removed (old), context (both)."""
        return frozenset(pos for h in self.hunks for line in h.lines for pos in line.positions())

    def hunk_at(self, side: Side, line: int) -> Hunk | None:
        for hunk in self.hunks:
            if any((side, line) in dl.positions() for dl in hunk.lines):
                return hunk
        return None

    def line_at(self, side: Side, line: int) -> DiffLine | None:
        for hunk in self.hunks:
            for dl in hunk.lines:
                if (side, line) in dl.positions():
                    return dl
        return None


@dataclass(frozen=True)
class ChangeSet:
    files: tuple[FileDiff, ...] = field(default_factory=tuple)

    def file(self, path: str) -> FileDiff | None:
        for f in self.files:
            if path in (f.new_path, f.old_path):
                return f
        return None

    @property
    def changed_lines(self) -> int:
        return sum(f.changed_lines for f in self.files)


_DIFF_START = re.compile(r"^(diff --git |--- )", re.MULTILINE)


MAX_HUNKS = 100_000  # a change of more hunks is refused: each costs a piece, rows, a header


def check_size(size: int, hunks: int, max_mb: float, read_to_limit: bool = False) -> None:
    """Refuse a change beyond `max_mb` of diff or `MAX_HUNKS` hunks (exit 2, in one line);
    `read_to_limit`: the input was read no further than the limit, so its size is unknown."""
    if size > max_mb * 2**20:
        how_large = "" if read_to_limit else f"{_size(size)} of diff, "
        raise ChangeTooLarge(
            f"the change is {how_large}more than max_diff_mb ({max_mb:g} MB): review it in "
            "parts, or raise the limit")
    if hunks > MAX_HUNKS:
        raise ChangeTooLarge(f"the change has {hunks} hunks, more than {MAX_HUNKS}: review it "
                             f"in parts")


def _size(size: int) -> str:
    return f"{size / 2**20:.2f} MB" if size >= 2**20 // 10 else f"{size / 1024:.1f} KB"


def check_raw(raw: bytes, max_mb: float) -> None:
    """`check_size` on a diff's bytes, before parsing them (parsing 50 MB took 15 s, 634 MB)."""
    check_size(len(raw), raw.count(b"\n@@ -") + raw.startswith(b"@@ -"), max_mb,
               read_to_limit=True)


def parse(raw: bytes | str) -> ChangeSet:
    """Parse `git diff` / `git format-patch` output. Raises DiffError for empty or non-diff input."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        raise DiffError("the diff is empty: nothing to review")
    start = _DIFF_START.search(text)
    if start is None:
        raise DiffError("the input is not a unified diff (no 'diff --git' or '---' header found)")
    # format-patch: drop the mail headers and message before the first diff
    # ("GIT binary patch" payload lines start with a letter, so they never look like diff lines)
    text = text[start.start():]
    try:
        patch = PatchSet(StringIO(text))  # StringIO splits on "\n" only
    except UnidiffParseError as exc:
        raise DiffError(f"the diff could not be parsed: {exc}") from None
    _check_accounted(text, patch)
    return ChangeSet(tuple(_file(pf) for pf in patch))


_HEADER = re.compile(
    r"(diff --git |index |--- |\+\+\+ |old mode |new mode |deleted file mode |new file mode "
    r"|similarity index |dissimilarity index |rename from |rename to |copy from |copy to "
    r"|Binary files .* differ$|\\ No newline at end of file$"
    r"|@@ -\d+(,\d+)? \+\d+(,\d+)? @@)")
_MAIL_START = re.compile(r"From [0-9a-f]{40} ")  # the next patch of a format-patch series
_VERSION = re.compile(r"\d+(\.\w+)+")  # the signature's git version, after "-- "
_CR_ONLY = re.compile(r"\r(?!\n)(diff --git |--- |\+\+\+ |@@ -)")


class _Reading(Enum):  # where _check_accounted is: a binary patch's payload, a mail's signature
    DIFF, BINARY, SIGNATURE, MAIL = range(4)


def _check_accounted(text: str, patch: PatchSet) -> None:
    """Every line is a file header, a hunk header or a line of a parsed hunk (or format-patch
    mail between patches): anything else would be dropped, so the input is refused instead."""
    cr = _CR_ONLY.search(text)
    if cr is not None:
        raise DiffError(f"the diff uses CR-only line ends (line {text.count(chr(10), 0, cr.start()) + 1}); "
                        "convert them to LF")
    parsed = {line.diff_line_no for pf in patch for hunk in pf for line in hunk}
    state = _Reading.DIFF
    for number, line in enumerate(text.split("\n"), 1):
        if number in parsed:
            continue
        if line.startswith("diff --git "):
            state = _Reading.DIFF
        elif state in (_Reading.BINARY, _Reading.MAIL):
            continue
        elif state is _Reading.SIGNATURE:
            if _MAIL_START.match(line):
                state = _Reading.MAIL
            elif line.strip() and not _VERSION.fullmatch(line.strip()):
                break
            continue
        if line == "GIT binary patch":
            state = _Reading.BINARY
        elif line == "-- ":  # format-patch's signature: the git version, maybe the next mail
            state = _Reading.SIGNATURE
        elif line.strip() and not _HEADER.match(line):
            break
    else:
        return
    shown = line[:60]
    raise DiffError(f"line {number} of the diff belongs to no file or hunk (a hunk longer than its "
                    f"@@ header says, or text between files): {shown!r}")


def _file(pf) -> FileDiff:  # type: ignore[no-untyped-def]
    info = "".join(pf.patch_info or ())
    # git says "new file mode"/"deleted file mode"; an empty file that gains or loses all its
    # lines is still the same file (unidiff would call it added/removed from the @@ -0,0 range)
    added = "\nnew file mode " in "\n" + info or pf.source_file == "/dev/null"
    removed = "\ndeleted file mode " in "\n" + info or pf.target_file == "/dev/null"
    old = None if added else _clean_path(pf.source_file)
    new = None if removed else _clean_path(pf.target_file)
    # unidiff leaves the paths of hunk-less entries (binary, mode-only, pure rename) as parsed from
    # the "diff --git" line; fall back to them
    if old is None and new is None or (old == "/dev/null" and new == "/dev/null"):
        old = new = _clean_path(pf.path)
    hunks = tuple(_hunk(h) for h in pf)
    modes = (pf.patch_info and _modes(str(pf.patch_info))) or (None, None)
    return FileDiff(
        old_path=old,
        new_path=new,
        hunks=hunks,
        binary=bool(pf.is_binary_file),
        submodule=bool(pf.is_submodule) or any(
            line.text.startswith("Subproject commit ") for h in hunks for line in h.lines
        ),
        old_mode=modes[0],
        new_mode=modes[1],
    )


def _hunk(h) -> Hunk:  # type: ignore[no-untyped-def]
    lines = tuple(
        DiffLine(
            kind=line.line_type,
            old=line.source_line_no,
            new=line.target_line_no,
            text=line.value.removesuffix("\n"),
        )
        for line in h
        if line.line_type in ("+", "-", " ")
    )
    return Hunk(h.source_start, h.source_length, h.target_start, h.target_length,
                h.section_header, lines)


_MODE = re.compile(r"^(old|new|new file|deleted file) mode (\d+)$", re.MULTILINE)


def _modes(info: str) -> tuple[str | None, str | None]:
    found = dict(_MODE.findall(info))
    return (found.get("old") or found.get("deleted file"), found.get("new") or found.get("new file"))


# git's prefixes: a/ b/, the mnemonic ones (c/ i/ o/ w/) and 1/ 2/ of `git diff --no-index`
_PREFIX = re.compile(r"^[abciow12]/")


def _clean_path(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
    return _PREFIX.sub("", _unquote(path.strip()), count=1)


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths: "a/\\303\\251.txt" → a/é.txt."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        try:
            raw = codecs.escape_decode(path[1:-1].encode("utf-8"))[0]
        except ValueError:  # a malformed escape: keep the path as written
            return path[1:-1]
        return raw.decode("utf-8", errors="replace")
    return path
