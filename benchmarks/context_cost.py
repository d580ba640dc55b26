"""What the code around a change costs in prompt tokens, and how often it fits.

For each `--git` range of a repository: the chunks' exact prompt tokens (vLLM /tokenize) without
and with the code around the hunks, the share of files that got some, and of hunks whose
enclosing definition was found (tree-sitter or the fallback); the names the added lines call,
how many have a definition elsewhere in the head tree (git grep), and how many were shown.

    python benchmarks/context_cost.py --base-url http://127.0.0.1:8000/v1 --repo /tmp/click \\
        d340b0c1..d340b0c1^ 1241abae..1241abae^ 762c97ee..762c97ee^ v8.1.0..v8.1.3

Talks only to the server given (127.0.0.1 in the project's own runs).
"""

from __future__ import annotations

import argparse
import json
import os

from reviewbot import diff, git
from reviewbot.config import resolve
from reviewbot.context import Context
from reviewbot.engine import filters
from reviewbot.engine.build import make_engine
from reviewbot.engine.definitions import called_names, defined_in, git_finder
from reviewbot.engine.surroundings import enclosing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("ranges", nargs="+")
    args = ap.parse_args()
    os.chdir(args.repo)
    # the forced call: the figures in docs/performance.md were measured with it
    engine = make_engine(resolve({"base_url": args.base_url, "verify": False,
                                  "findings_format": "tool"}, env={},
                                 file_values={}))
    out = []
    for range_ in args.ranges:
        changes, _ = filters.split(diff.parse(git.from_git(range_)))
        right = range_.split("..", 1)[1].lstrip(".") or "HEAD"
        context = Context(files=lambda path, rev=right: diff.file_at(rev, path),
                          definitions=git_finder(right))
        chunks = engine.fitting.chunks(changes, Context())
        plain = sum(engine.fitting.exact(c.pieces, Context()) for c in chunks)
        around = engine.fitting.with_surroundings(chunks, context)
        richer = sum(engine.counter.count_request(*engine.requests.request(c, Context()))
                     for c in around)
        added = [ln.text for f in changes.files for h in f.hunks for ln in h.lines
                 if ln.kind == "+"]
        names = called_names(added, defined_in(added))

        def read(path: str, rev: str = right) -> list[str] | None:
            text = diff.file_at(rev, path)
            return text.split("\n") if text is not None else None

        found_defs = git_finder(right)(names, read)
        hunks = found = 0
        for f in changes.files:
            text = diff.file_at(right, f.path)
            if text is None:
                continue
            lines = text.split("\n")
            for h in f.hunks:
                news = [ln.new for ln in h.lines if ln.new is not None and ln.changed]
                if news:
                    hunks += 1
                    found += enclosing(lines, f.path, min(news), max(news)) is not None
        out.append({"range": range_, "files": len(changes.files), "chunks": len(chunks),
                    "changed_lines": changes.changed_lines, "prompt_tokens_diff_only": plain,
                    "prompt_tokens_with_context": richer,
                    "ratio": round(richer / plain, 3) if plain else None,
                    "context_blocks": sum(1 for c in around for b in c.around.split("\n=== ")
                                              if b),
                    "names_searched": len(names),
                    "definitions_found": len(found_defs),
                    "definitions_shown": sum(c.around.count("(definition of ") for c in around),
                    "hunks": hunks, "hunks_with_enclosing_definition": found})
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
