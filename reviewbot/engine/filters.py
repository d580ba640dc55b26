"""Which files are not sent to the model, each with the reason (nothing is dropped silently)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from reviewbot.diff import ChangeSet, FileDiff
from reviewbot.withheld import LOCK_FILE, SkippedFile

LOCK_FILES = frozenset({
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "npm-shrinkwrap.json", "poetry.lock",
    "uv.lock", "Pipfile.lock", "pdm.lock", "Cargo.lock", "go.sum", "composer.lock", "Gemfile.lock",
    "mix.lock", "pubspec.lock", "Podfile.lock", "packages.lock.json", "flake.lock", "bun.lockb",
})
_GENERATED = re.compile(
    r"(\.min\.(js|css)$|\.map$|\.pb\.go$|_pb2(_grpc)?\.pyi?$|\.generated\.\w+$|\.g\.dart$"
    r"|(^|/)__snapshots__/|\.snap$)"
)
_VENDORED = re.compile(r"(^|/)(vendor|third_party|third-party|node_modules|bower_components)/")
# the standard markers only: `@generated` (Meta's convention, also protoc, Buck, …) and Go's
# "Code generated … DO NOT EDIT." line; prose such as "# Not auto-generated" is not one
_GENERATED_MARK = re.compile(r"@generated\b|^\s*// Code generated .* DO NOT EDIT\.$")


# A changed line this long is minified or generated; it also could not fit a model's context.
MAX_LINE_CHARS = 20_000


def skip(file: FileDiff, exclude: Iterable[str] = (),
         lock_files: bool = False) -> SkippedFile | None:
    """Why `file` is not sent to the model, or None when it is; `lock_files`: review a lock
    file's changes (its dependency changes) too."""
    path = file.path
    name = path.rsplit("/", 1)[-1]
    if file.binary:
        return SkippedFile(path, "binary file", source=False)
    if file.submodule:
        return SkippedFile(path, "submodule", source=False)
    for pattern in exclude:
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(name, pattern):
            return SkippedFile(path, f"excluded by pattern {pattern!r}", source=False)
    reason = _heuristic(file, name)
    if reason == LOCK_FILE and lock_files:
        reason = None
    if reason is not None:
        return SkippedFile(path, reason)
    if file.changed_lines == 0:
        if file.status == "renamed":
            return SkippedFile(path, "pure rename, no content change", source=False)
        if file.status == "mode-changed":
            return SkippedFile(path, "mode change only", source=False)
        return SkippedFile(path, "no changed lines (empty file)", source=False)
    return None


def _heuristic(file: FileDiff, name: str) -> str | None:
    """Rules that the change's author can trigger: their skips are reported as unreviewed."""
    path = file.path
    if name in LOCK_FILES:
        return LOCK_FILE
    if _VENDORED.search(path):
        return "vendored path"
    if _GENERATED.search(path):
        return "generated or minified file"
    longest = max((len(line.text) for h in file.hunks for line in h.lines if line.changed),
                  default=0)
    if longest > MAX_LINE_CHARS:
        return f"minified or generated (a line of {longest:,} characters)"
    # a generator's marker sits in the first lines of the file, shown as added or context
    for line in (ln for h in file.hunks for ln in h.lines if ln.new is not None and ln.new <= 5):
        found = _GENERATED_MARK.search(line.text.rstrip("\r"))
        if found:
            return f"generated file (marker {found.group(0).strip()[:60]!r} in its header)"
    return None


def split(changes: ChangeSet, exclude: Iterable[str] = (),
          lock_files: bool = False) -> tuple[ChangeSet, list[SkippedFile]]:
    """The files to review, and the skipped ones with their reasons."""
    exclude = tuple(exclude)
    keep: list[FileDiff] = []
    skipped: list[SkippedFile] = []
    for file in changes.files:
        why = skip(file, exclude, lock_files)
        if why is None:
            keep.append(file)
        else:
            skipped.append(why)
    return ChangeSet(tuple(keep)), skipped
