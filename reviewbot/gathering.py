"""What a review knows besides the diff, for every source: a diff file, a git range, a merge or
pull request. The repository is untrusted in every mode, CI or not: every file is read through
the safe reader (reviewbot.tree) or capped like it."""

from __future__ import annotations

import logging
import os

from reviewbot import config, git
from reviewbot.context import AGENTS_MD, Context, HeadFiles, Intent
from reviewbot.engine.definitions import git_finder
from reviewbot.errors import ForgeError
from reviewbot.forges.base import ChangeRequest, FileReader, Forge
from reviewbot.tree import MAX_FILE_BYTES, GitTree, Tree, WorkingTree

log = logging.getLogger(__name__)


def for_local(git_range: str | None, title: str | None, description: str | None) -> Context:
    """--diff or --git: the flags' intent, and for --git the range's commit messages (the title
    then defaults to the subject of its newest commit); the repository's AGENTS.md from the
    left side of a --git range (the target: in CI the working tree is the change's own), and
    outside CI, with --diff or a single revision, from the working tree."""
    commits = git.commit_messages(git_range) if git_range else ()
    default_title = commits[-1].split("\n", 1)[0] if commits else ""
    intent = Intent(title or default_title, description or "", commits)
    base = git.range_base(git_range) if git_range else None
    if base:
        agents = GitTree(base).read(AGENTS_MD)
    elif config.in_ci(os.environ):
        agents = None
    else:
        agents = WorkingTree().read(AGENTS_MD)
    if not git_range:  # a diff file may not match any tree here
        return Context(intent, agents or "")
    right = right_side(git_range)
    # the new side's files: the right side's revision, or the working tree, which is what
    # `git diff REV` compares with
    tree: Tree = GitTree(right) if right else WorkingTree()
    return Context(intent, agents or "", tree.read, git_finder(right or None))


def right_side(git_range: str) -> str:
    """The revision a range's new side is at: B of A..B or A...B (HEAD when empty); "" for a
    single revision, whose new side is the working tree."""
    if ".." not in git_range:
        return ""
    return git_range.split("..", 1)[1].lstrip(".") or "HEAD"


def for_forge(forge: Forge, request: ChangeRequest) -> Context:
    """A merge/pull request: its intent, the target branch's AGENTS.md (never the change's
    own), and the files at its head through the forge."""
    return Context(request.intent, forge.target_file(AGENTS_MD) or "",
                   head_files(forge, request.head_sha))


def head_files(forge: Forge, sha: str) -> HeadFiles | None:
    """The forge's files at the change's head, for the code around each hunk; a file that
    cannot be read is simply not shown (the diff is reviewed all the same)."""
    if not isinstance(forge, FileReader) or not sha:
        return None
    reader = forge

    def read(path: str) -> str | None:
        try:
            text = reader.file_at(path, sha)
        except ForgeError as exc:
            log.warning("not showing the code around %s: %s", path, exc)
            return None
        # the forge's answer is untrusted as the tree is: the same cap as reviewbot.tree
        return text if text is None or len(text) <= MAX_FILE_BYTES else None
    return read
