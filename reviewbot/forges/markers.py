"""The bot's state in its own comments: one hidden marker per comment, typed, with one parser.

A marker is an HTML comment carrying base64 JSON, always the last line of a comment the bot
wrote. Only the trailing marker counts (anything earlier is someone else's text; model text
cannot contain one anyway, see modeltext), and the forge modules read markers only from the
token's own comments. `parse` checks every field, so a marker edited by hand is just ignored.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from reviewbot.findings import MARKED_TITLE, SEVERITIES, Finding

PREFIX = "<!-- reviewbot:"
_MARKER = re.compile(r"<!-- reviewbot:([A-Za-z0-9+/=]{1,60000}) -->\s*\Z")
_SHA = re.compile(r"[0-9A-Za-z]{1,64}")  # a commit id (tests use short names)
OUTDATED = "outdated"
_TITLE, _CATEGORY = MARKED_TITLE, 40


@dataclass(frozen=True)
class FindingMarker:
    """On an inline comment: which finding it is, whether the bot marked it outdated, and what
    the gate needs of it while its thread stays open (severity, category, title)."""

    fingerprint: str
    outdated: bool = False
    severity: str = ""  # "" on comments written before the gate read them
    category: str = ""
    title: str = ""

    @classmethod
    def of(cls, f: Finding) -> FindingMarker:
        return cls(f.fingerprint, severity=f.severity.label, category=f.category[:_CATEGORY],
                   title=f.title[:_TITLE])

    def render(self) -> str:
        fields = {"fingerprint": self.fingerprint, "severity": self.severity,
                  "category": self.category, "title": self.title}
        if self.outdated:
            fields["state"] = OUTDATED
        return encode("finding", {k: v for k, v in fields.items() if v})


@dataclass(frozen=True)
class SummaryMarker:
    """On the summary note: the last head reviewed completely, and the findings carried over."""

    last_reviewed_sha: str | None = None
    unanchored: str | None = None  # forges.summary.pack()'s JSON
    paused: bool = False  # a member said `pause`: no reviews until `resume`

    def render(self) -> str:
        fields = {k: v for k, v in (("last_reviewed_sha", self.last_reviewed_sha),
                                    ("unanchored", self.unanchored),
                                    ("paused", "true" if self.paused else None)) if v}
        return encode("summary", fields)


@dataclass(frozen=True)
class ReplyMarker:
    """On the bot's answer in a thread: the note it answers (so an answer is given once), and
    whether it is the note saying the bot stops answering in that thread."""

    to: int
    limit: bool = False
    dismissed: bool = False  # it withdraws the thread's finding: not raised again on the change

    def render(self) -> str:
        flags = {k: "true" for k, v in (("limit", self.limit), ("dismissed", self.dismissed)) if v}
        return encode("reply", {"to": str(self.to), **flags})


Marker = FindingMarker | SummaryMarker | ReplyMarker


def encode(kind: str, fields: dict[str, str]) -> str:
    """The wire form (tests build forged markers with it)."""
    payload = json.dumps({"kind": kind, **fields}, sort_keys=True).encode()
    return f"{PREFIX}{base64.b64encode(payload).decode()} -->"


def decode(body: str | None) -> dict[str, Any] | None:
    """The trailing marker's JSON object, or None."""
    match = _MARKER.search((body or "")[-60100:])
    if match is None:
        return None
    try:
        data = json.loads(base64.b64decode(match.group(1), validate=True))
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def parse(body: str | None) -> Marker | None:
    """The comment's marker, typed and checked, or None."""
    data = decode(body)
    if data is None:
        return None
    if data.get("kind") == "finding":
        return _finding(data)
    if data.get("kind") == "summary":
        sha, unanchored = data.get("last_reviewed_sha"), data.get("unanchored")
        if (sha is not None and not (isinstance(sha, str) and _SHA.fullmatch(sha))) \
                or (unanchored is not None and not isinstance(unanchored, str)) \
                or data.get("paused") not in (None, "true"):
            return None
        return SummaryMarker(sha, unanchored, data.get("paused") == "true")
    if data.get("kind") == "reply":
        to, limit, dismissed = data.get("to"), data.get("limit"), data.get("dismissed")
        if isinstance(to, str) and to.isdigit() and len(to) < 20 \
                and limit in (None, "true") and dismissed in (None, "true"):
            return ReplyMarker(int(to), limit == "true", dismissed == "true")
        return None
    return None


def _finding(data: dict[str, Any]) -> FindingMarker | None:
    fp, state = data.get("fingerprint"), data.get("state")
    severity, category, title = (data.get(k, "") for k in ("severity", "category", "title"))
    if not (isinstance(fp, str) and fp and state in (None, OUTDATED)):
        return None
    if severity not in ("", *SEVERITIES) or not isinstance(category, str) \
            or not isinstance(title, str) or len(category) > _CATEGORY or len(title) > _TITLE:
        return None
    return FindingMarker(fp, state == OUTDATED, severity, category, title)


def without_marker(body: str) -> str:
    """`body` without its trailing marker."""
    return _MARKER.sub("", body).rstrip()


def finding_marker(body: str | None) -> FindingMarker | None:
    m = parse(body)
    return m if isinstance(m, FindingMarker) else None


def summary_marker(body: str | None) -> SummaryMarker | None:
    m = parse(body)
    return m if isinstance(m, SummaryMarker) else None


def reply_marker(body: str | None) -> ReplyMarker | None:
    m = parse(body)
    return m if isinstance(m, ReplyMarker) else None
