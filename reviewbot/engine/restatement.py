"""A finding that restates the change's own prose is a summary of the change, not a review of
it: a small model copies a changelog entry or a comment ("When parsing from an InputStream
… the stream would not be completely read") and calls it a major bug. Such candidates are
dropped, with their reason, before verification."""

from __future__ import annotations

import re

from reviewbot.engine.chunking import Chunk
from reviewbot.findings import Finding
from reviewbot.withheld import Dropped, DropStage

RUN = 4  # words in a run
SHARE = 0.5  # a finding whose runs are at least this share the change's prose restates it
MIN_RUNS = 3  # a finding of fewer runs (a title of a few words) is not judged

_WORD = re.compile(r"[a-z0-9_]+")
# a line comment or a line inside a block comment, in the languages the field reviews
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*|--|;|\"\"\"|'''|<!--)")
_DOC_SUFFIXES = (".md", ".mdx", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc")
# documents without a suffix (a file named release.go is code)
_DOC_NAME = re.compile(r"^(changes|changelog|news|history|releases?|authors|readme)$",
                       re.IGNORECASE)


def runs(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + RUN]) for i in range(len(words) - RUN + 1)}


def is_document(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.lower().endswith(_DOC_SUFFIXES) or bool(_DOC_NAME.match(name))


def prose(chunk: Chunk) -> set[tuple[str, ...]]:
    """The word runs of the prose the chunk changes: comments, and the lines of documents
    (a removed comment copied as a finding restates the change as much as an added one)."""
    out: set[tuple[str, ...]] = set()
    for piece in chunk.pieces:
        doc = is_document(piece.file.path)
        out |= runs("\n".join(line.text for line in piece.lines
                              if line.changed and (doc or _COMMENT.match(line.text))))
    return out


def restates(finding: Finding, own: set[tuple[str, ...]]) -> bool:
    """A security finding is never one: the change's author writes the prose, and a comment
    that names the hole in advance must not close the finding for the gate."""
    if finding.category == "security":
        return False
    said = runs(f"{finding.title}\n{finding.body}")
    return len(said) >= MIN_RUNS and len(said & own) >= SHARE * len(said)


def drop_restated(findings: list[Finding], chunk: Chunk) -> tuple[list[Finding], list[Dropped]]:
    """(the findings that say something of their own, the restatements as dropped)."""
    own = prose(chunk) if findings else set()  # most chunks of a review find nothing
    kept, dropped = [], []
    for f in findings:
        if own and restates(f, own):
            dropped.append(Dropped(f, DropStage.RESTATED, "restates the change's own prose"))
        else:
            kept.append(f)
    return kept, dropped
