"""GitLab per-file diff objects (`/diffs`, `/changes`, compare) → FileDiff (pure functions).

Each object's `diff` starts at the first `@@`; the `--- a/old` / `+++ b/new` header (or
`/dev/null`) is prepended before parsing. Collapsed and too-large files come back with an empty
`diff`: they are reported, never silently dropped, so the caller can fetch them another way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from reviewbot.diff import FileDiff, parse
from reviewbot.errors import DiffError
from reviewbot.withheld import SkippedFile


def api_path(d: dict[str, Any]) -> str:
    return str(d.get("new_path") or d.get("old_path") or "")


def missing_reason(d: dict[str, Any]) -> str | None:
    """Why GitLab left this file's diff out, or None if it is all there."""
    if d.get("too_large"):
        return "GitLab did not return the diff: the file is too large"
    if d.get("collapsed") and not d.get("diff"):
        return "GitLab collapsed the diff of this file (too many changed lines)"
    return None


def _is_binary(text: str) -> bool:
    return text.startswith(("Binary files ", "GIT binary patch")) or "\nGIT binary patch" in text


def file_diff(d: dict[str, Any]) -> FileDiff:
    """One API diff object as a FileDiff, with GitLab's own old/new paths."""
    old_path = None if d.get("new_file") else str(d.get("old_path") or d.get("new_path"))
    new_path = None if d.get("deleted_file") else str(d.get("new_path") or d.get("old_path"))
    text = str(d.get("diff") or "")
    modes = (d.get("a_mode") or None, d.get("b_mode") or None)
    if _is_binary(text) or "@@" not in text:
        return FileDiff(old_path, new_path, binary=_is_binary(text),
                        submodule="160000" in modes, old_mode=modes[0], new_mode=modes[1])
    head = (
        f"--- {'a/' + old_path if old_path else '/dev/null'}\n"
        f"+++ {'b/' + new_path if new_path else '/dev/null'}\n"
    )
    if not text.endswith("\n"):
        text += "\n"
    try:
        parsed = parse(head + text).files
    except DiffError as exc:
        raise DiffError(f"GitLab's diff of {new_path or old_path} could not be parsed: {exc}") from None
    if len(parsed) != 1:
        raise DiffError(f"GitLab's diff of {new_path or old_path} holds {len(parsed)} files")
    return replace(parsed[0], old_path=old_path, new_path=new_path,
                   old_mode=modes[0], new_mode=modes[1],
                   submodule=parsed[0].submodule or "160000" in modes)


def convert(
    objects: Iterable[dict[str, Any]],
) -> tuple[list[FileDiff], list[dict[str, Any]], list[SkippedFile]]:
    """(parsed files, objects whose diff GitLab left out, unparseable files with the reason)."""
    files: list[FileDiff] = []
    missing: list[dict[str, Any]] = []
    broken: list[SkippedFile] = []
    for d in objects:
        if missing_reason(d):
            missing.append(d)
            continue
        try:
            files.append(file_diff(d))
        except DiffError as exc:
            broken.append(SkippedFile(api_path(d), str(exc)))
    return files, missing, broken
