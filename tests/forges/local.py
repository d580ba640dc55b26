"""A forge that prints what would be posted: for trying the posting flow without a host."""

from __future__ import annotations

import sys
from typing import TextIO

from reviewbot.diff import ChangeSet
from reviewbot.findings import Finding
from reviewbot.forges.base import ChangeRequest, PostedComment, PostOutcome
from reviewbot.forges.markers import FindingMarker
from reviewbot.rendering import comment, suggestion_block


class LocalForge:
    name = "local"

    def __init__(
        self,
        changes: ChangeSet,
        *,
        head_sha: str = "",
        base_sha: str = "",
        title: str = "local change",
        out: TextIO | None = None,
    ) -> None:
        self._changes = changes
        self._head = head_sha
        self._base = base_sha
        self._title = title
        self._out = out if out is not None else sys.stdout
        self._summary: str | None = None

    def fetch(self) -> ChangeRequest:
        return ChangeRequest(
            forge="local", project="local", number=0, title=self._title,
            head_sha=self._head, base_sha=self._base, start_sha=self._base, changes=self._changes,
        )

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        return None

    def existing(self) -> list[PostedComment]:
        return []

    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        for f in findings:
            self._out.write(format_comment(f) + "\n\n")
        return PostOutcome(posted=list(findings))

    def read_summary(self) -> str | None:
        return self._summary

    def target_file(self, path: str) -> str | None:
        return None

    def write_summary(self, request: ChangeRequest, body: str) -> None:
        self._summary = body
        self._out.write(body + "\n")


def format_comment(f: Finding) -> str:
    """The comment a forge would post (the same renderer), with its position in front."""
    span = f"{f.line}" if f.end_line is None else f"{f.line}-{f.end_line}"
    where = f"{f.path}:{span} ({f.side.value}) [{f.severity.label}]"
    block = suggestion_block(f.suggestion) if f.suggestion is not None else ""
    return where + "\n" + comment(f, block, FindingMarker.of(f).render())
