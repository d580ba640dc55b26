"""What a review knows besides the diff, for every source: a diff file, a git range, a merge or
pull request. The head files and definitions come from reviewbot.flow.headtree for all of them;
the repository is untrusted in every mode, CI or not: every file is read through the safe
reader (reviewbot.tree) or capped like it."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import replace

from reviewbot import git
from reviewbot.context import AGENTS_MD, Context, Intent
from reviewbot.errors import ForgeError
from reviewbot.flow.headtree import HeadTree, Trees, at_revision
from reviewbot.flow.select import in_ci
from reviewbot.forges.base import ChangeRequest, Forge, IssueReader
from reviewbot.tree import GitTree, WorkingTree

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
    elif in_ci(os.environ):
        agents = None
    else:
        agents = WorkingTree().read(AGENTS_MD)
    if not git_range:  # a diff file may not match any tree here
        return Context(intent, agents or "")
    # the new side's files: the right side's revision, or the working tree, which is what
    # `git diff REV` compares with
    return with_tree(Context(intent, agents or ""), at_revision(right_side(git_range) or None))


def right_side(git_range: str) -> str:
    """The revision a range's new side is at: B of A..B or A...B (HEAD when empty); "" for a
    single revision, whose new side is the working tree."""
    if ".." not in git_range:
        return ""
    return git_range.split("..", 1)[1].lstrip(".") or "HEAD"


def for_forge(forge: Forge, request: ChangeRequest, trees: Trees,
              linked_issues: bool = True) -> Context:
    """A merge/pull request: its intent, the issues it closes (of its own project), the
    target branch's AGENTS.md (never the change's own), and the repository at its head
    (reviewbot.flow.headtree: the local clone, else the forge's archive)."""
    context = Context(request.intent, forge.target_file(AGENTS_MD) or "")
    if linked_issues and isinstance(forge, IssueReader) and references_issue(request.intent):
        context = with_issues(context, forge, request.intent)
    return with_tree(context, trees.at(forge, request.head_sha))


def references_issue(intent: Intent) -> bool:
    """Whether the change's description or commits name an issue (`#12`, `group/app#7`, an
    issue's URL): only then are the forge's issue links read."""
    return any(_ISSUE_REFERENCE.search(text) for text in (intent.description, *intent.commits))


_ISSUE_REFERENCE = re.compile(r"#\d+|/issues/\d+")


def named_issues(intent: Intent) -> set[str]:
    """The references (`#12`) of the issues the change's own description and commits name:
    a forge also links issues that someone mentioned in a comment, and those are not the
    change's to bring into its review."""
    texts = (intent.description, *intent.commits)
    return {f"#{m.group(1) or m.group(2)}" for t in texts for m in _NAMED.finditer(t)}


_NAMED = re.compile(r"#(\d+)\b|/issues/(\d+)\b")


def with_issues(context: Context, forge: IssueReader, intent: Intent) -> Context:
    """The issues the change links and names itself, or a note why they could not be read: the
    review goes on without them."""
    named = named_issues(intent)
    try:
        return replace(context, issues=tuple(i for i in forge.linked_issues() if i.ref in named))
    except ForgeError as exc:
        log.warning("linked issues not read: %s", exc)
        note = f"the issues this change links could not be read ({exc}); reviewed without them"
        return replace(context, notes=(*context.notes, note))


def with_tree(context: Context, tree: HeadTree) -> Context:
    log.info("head files from %s", tree.source)
    return replace(context, files=tree.files, definitions=tree.definitions,
                   notes=context.notes + ((tree.note,) if tree.note else ()))
