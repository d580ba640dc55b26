"""The local repository through git: the diff of a range, its commit messages, its sides.

A range is a revision or range, never an option (it may not start with "-") and is passed
after `--end-of-options`.
"""

from __future__ import annotations

import re
import subprocess

from reviewbot.errors import DiffError

_RANGE = re.compile(r"[^\s\x00-\x1f\x7f-][^\s\x00-\x1f\x7f]*")


def from_git(range_: str, cwd: str | None = None) -> bytes:
    """`git diff RANGE` in the current repository, with stable, unquoted output and renames found.

    RANGE is a revision range, never an option: it may not start with "-", and it is passed
    after `--end-of-options` (`--git --output=FILE` would make git write a file).
    """
    if not _RANGE.fullmatch(range_):
        raise DiffError(f"--git needs a revision range such as origin/main...HEAD, not {range_!r}")
    # pin every setting that changes the output format, whatever the user's git config says
    argv = ["git", "-c", "core.quotePath=false", "-c", "diff.noprefix=false",
            "-c", "diff.mnemonicPrefix=false", "-c", "diff.submodule=short", "diff", "--no-color",
            "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
            "--submodule=short", "--no-relative", "--find-renames", "--binary",
            "--end-of-options", range_]
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, check=False, timeout=300)
    except FileNotFoundError:
        raise DiffError("git is not installed") from None
    if proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().split("\n")
        raise DiffError(f"git diff {range_} failed: {msg[0] if msg else 'exit ' + str(proc.returncode)}")
    return proc.stdout


def commit_messages(range_: str, cwd: str | None = None, limit: int = 30) -> tuple[str, ...]:
    """The messages of the commits a `--git` range reviews, oldest first (at most `limit`, the
    newest); none for a single revision (a working-tree diff has no commits of its own)."""
    if ".." not in range_ or not _RANGE.fullmatch(range_):
        return ()
    argv = ["git", "log", "--no-color", "--format=%B%x00", "--right-only", "-n", str(limit),
            "--end-of-options", range_]
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, check=False, timeout=60)
    except FileNotFoundError:
        raise DiffError("git is not installed") from None
    if proc.returncode != 0:
        return ()  # the diff itself was readable: the messages are only context
    messages = proc.stdout.decode("utf-8", "replace").split("\0")
    return tuple(reversed([m.strip() for m in messages if m.strip()]))


def is_revision(text: str) -> bool:
    """A revision or range git may take as such: no option, no whitespace or control chars."""
    return _RANGE.fullmatch(text) is not None


def range_base(range_: str) -> str | None:
    """The left side of `A..B` / `A...B` (the target), or None for a single revision."""
    left = range_.split("..", 1)[0] if ".." in range_ else ""
    return left or None

