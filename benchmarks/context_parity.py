"""The context a merge request's review gets through the forge API path, against `--git` on
the same change: the share of the ±30-line window around each changed line that the model
sees, definitions found and shown (tree-sitter against the line regexp), the tokens each kind
of context costs, and whether the two paths' prompts agree.

For each REPO:RANGE (a clone; RANGE as `BASE..HEAD`), the change is reviewed as far as its
prompts twice: `--git` (reviewbot.flow.gathering.for_local in the clone) and `--mr` through the fake
GitLab of tests/ serving that clone, from a directory that is not a clone (so the head tree
comes from the archive over the API). Tokens are the engine's conservative estimate (no
server is needed); the default settings (64K context) decide the budget.

    python benchmarks/context_parity.py /tmp/bench/cobra:ad460ea^..ad460ea …

Talks only to the fake GitLab on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import gitlab

from reviewbot import diff, git
from reviewbot.archive import ArchiveCache
from reviewbot.config import Settings
from reviewbot.context import Context
from reviewbot.engine import filters
from reviewbot.engine.chunking import Chunk
from reviewbot.engine.definitions import called_names, defined_in, git_finder
from reviewbot.engine.orchestrator import Engine
from reviewbot.engine.tokens import EstimateTokenCounter
from reviewbot.flow import gathering
from reviewbot.flow.headtree import Trees, at_revision
from reviewbot.forges.gitlab.forge import GitLabForge
from tests.forges.fake_gitlab import FakeGitLab
from tests.forges.gitrepo import Repo

WINDOW = 30
TOKEN = "glpat-bench-0000"
_BLOCK = re.compile(r"^=== (.+?) lines (\d+)-(\d+) \((definition of .+?, )?head", re.MULTILINE)


def engine() -> Engine:
    return Engine(Settings(), None, EstimateTokenCounter(), "bench", 65536)  # type: ignore[arg-type]


def prompts(e: Engine, changes: diff.ChangeSet, context: Context) -> list[Chunk]:
    return e.fitting.with_surroundings(e.fitting.chunks(changes, context), context)


def window_share(chunks: list[Chunk], changes: diff.ChangeSet, context: Context) -> float:
    """Of the new-side lines within ±WINDOW of a changed line, the share some prompt shows."""
    seen: dict[str, set[int]] = {}
    for c in chunks:
        for p in c.pieces:
            seen.setdefault(p.file.path, set()).update(ln.new for ln in p.lines if ln.new)
        for m in _BLOCK.finditer(c.around):
            if not m.group(4):
                seen.setdefault(m.group(1), set()).update(range(int(m.group(2)), int(m.group(3)) + 1))
    want = shown = 0
    for f in changes.files:
        text = context.files(f.path) if context.files else None
        length = len(text.split("\n")) if text is not None else 0
        changed = {ln.new for h in f.hunks for ln in h.lines if ln.kind == "+" and ln.new}
        changed |= {ln.old for h in f.hunks for ln in h.lines if ln.kind == "-" and ln.old}
        window = {n for c in changed for n in range(c - WINDOW, c + WINDOW + 1) if 1 <= n <= length}
        want += len(window)
        shown += len(window & seen.get(f.path, set()))
    return shown / want if want else 1.0


def costs(e: Engine, chunks: list[Chunk]) -> dict[str, int]:
    around = defs = 0
    for c in chunks:
        for block in c.around.split("\n=== "):
            tokens = e.counter.count_texts([block])[0] if block else 0
            if "(definition of " in block.split("\n", 1)[0]:
                defs += tokens
            else:
                around += tokens
    return {"around_tokens": around, "definition_tokens": defs,
            "definitions_shown": sum(c.around.count("(definition of ") for c in chunks)}


def finders(changes: diff.ChangeSet, head: str, cwd: str) -> dict[str, Any]:
    """Definitions of the called names, by tree-sitter and by the line regexp alone."""
    added = [ln.text for f in changes.files for h in f.hunks for ln in h.lines if ln.kind == "+"]
    shown = [ln.text for f in changes.files for h in f.hunks for ln in h.lines if ln.kind != "-"]
    names = called_names(added, defined_in(shown))
    tree = at_revision(head, cwd)

    def read(path: str) -> list[str] | None:
        text = tree.files(path) if tree.files else None
        return text.split("\n") if text is not None else None

    out: dict[str, Any] = {"names": len(names)}
    counter = EstimateTokenCounter()
    for label, syntax in (("tree_sitter", True), ("regexp", False)):
        found = git_finder(head, cwd, syntax=syntax)(names, read)
        out[label] = {"found": len(found), "names_found": len({d.name for d in found}),
                      "tokens": sum(counter.count_texts(["\n".join(d.lines)])[0] for d in found)}
    return out


def one(spec: str, scratch: Path) -> dict[str, Any]:
    root, _, range_ = spec.partition(":")
    base, head = (git.range_base(range_) or ""), gathering.right_side(range_)
    here = os.getcwd()
    os.chdir(root)  # --git reads the repository it runs in
    try:
        return _compare(spec, root, base, head, scratch)
    finally:
        os.chdir(here)


def _compare(spec: str, root: str, base: str, head: str, scratch: Path) -> dict[str, Any]:
    repo = Repo(Path(root))  # `git init` again: harmless in a clone
    base, head = repo.git("rev-parse", base).strip(), repo.git("rev-parse", head).strip()
    changes, _ = filters.split(diff.parse(git.from_git(f"{base}..{head}")))
    parity = finders(changes, head, root)
    e = engine()
    with FakeGitLab(repo, base=base, head=head, token=TOKEN) as state:
        forge = GitLabForge(gitlab.Gitlab(state.url, private_token=TOKEN), 42, 7)
        request = forge.fetch()
        # the merge request's words for --git too: the intent costs the same in both, so any
        # difference is the head tree's
        local = gathering.for_local(f"{base}..{head}", request.title, request.description)
        by_git = prompts(e, changes, local)
        trees = Trees(ArchiveCache(scratch / "cache", 2**32), 2**30, cwd=str(scratch))
        remote = gathering.for_forge(forge, request, trees)
        mr_changes, _ = filters.split(request.changes)
        by_mr = prompts(e, mr_changes, remote)

    def tail(c: Chunk) -> str:
        user = e.requests.messages(c, Context())[1]["content"]
        return user[user.index("\nReview ") + 1:]

    return {
        "change": spec, "files": len(changes.files), "changed_lines": changes.changed_lines,
        "chunks": len(by_git),
        "git": {"window_share": round(window_share(by_git, changes, local), 3), **costs(e, by_git)},
        "mr": {"window_share": round(window_share(by_mr, mr_changes, remote), 3),
               **costs(e, by_mr)},
        "prompts_agree": [tail(a) for a in by_git] == [tail(b) for b in by_mr],
        "definitions": parity,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("changes", nargs="+", help="CLONE:BASE..HEAD")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for spec in args.changes:
            print(json.dumps(one(spec, Path(scratch))), flush=True)


if __name__ == "__main__":
    main()
