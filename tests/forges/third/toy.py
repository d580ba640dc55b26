"""A third forge, "toy", kept in memory: everything a forge brings (its adapter, threads, doctor
check and webhook hook) in this one folder, registered with one line (`register()`)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from reviewbot.checks import Check
from reviewbot.config import Settings
from reviewbot.diff import ChangeSet, parse
from reviewbot.discussion import Note, Thread
from reviewbot.errors import MalformedPayload
from reviewbot.findings import Finding
from reviewbot.forges.base import ChangeRequest, ForgeSettings, PostedComment, PostOutcome, Target
from reviewbot.forges.markers import FindingMarker
from reviewbot.forges.registry import ForgeKind, register
from reviewbot.rendering import comment
from reviewbot.webhook.events import Accepted, Ignored
from reviewbot.webhook.hooks import Hook
from reviewbot.webhook.jobs import QueuedRequest

DIFF = b"""diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,2 +1,3 @@
 def total(xs):
-    return sum(xs)
+    first = xs[0]
+    return sum(xs) / first
"""
BOT, MEMBER = (1, "toybot"), (2, "dana")


@dataclass
class Store:
    """The toy forge's server side: its posted comments, summary and notes."""

    comments: list[tuple[PostedComment, str]] = field(default_factory=list)
    summary: str | None = None
    notes: list[Note] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    paused: bool = False


STORE = Store()


class ToyForge:
    name = "toy"

    def __init__(self, target: Target, settings: ForgeSettings) -> None:
        self.target, self.settings = target, settings

    def fetch(self) -> ChangeRequest:
        return ChangeRequest("toy", self.target.project, self.target.number, "Divide the total",
                             "b" * 40, "a" * 40, "a" * 40, parse(DIFF))

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        return None

    def existing(self) -> list[PostedComment]:
        return [c for c, _ in STORE.comments]

    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        for f in findings:
            marker = FindingMarker.of(f)
            STORE.comments.append((PostedComment(str(len(STORE.comments)), f.fingerprint,
                                                 f.path, line=f.line, side=f.side.value,
                                                 marker=marker),
                                   comment(f, "", marker.render())))
        return PostOutcome(posted=list(findings))

    def read_summary(self) -> str | None:
        return STORE.summary

    def target_file(self, path: str) -> str | None:
        return None

    def write_summary(self, request: ChangeRequest, body: str) -> None:
        STORE.summary = body


class ToyThreads:
    def __init__(self, forge: ToyForge, discussion_id: str | None) -> None:
        self.forge = forge

    def me(self) -> tuple[int, str]:
        return BOT

    def find(self, note_id: int) -> tuple[Note, Thread]:
        note = next(n for n in STORE.notes if n.id == note_id)
        return note, Thread("t1", tuple(STORE.notes))

    def access_level(self, user_id: int) -> int:
        return 30 if user_id == MEMBER[0] else 0

    def head_sha(self) -> str:
        return "b" * 40

    def change_author(self) -> int:
        return 99

    def file_at(self, path: str, ref: str) -> str | None:
        return None

    def reply(self, thread: Thread, body: str) -> None:
        STORE.replies.append(body)

    def resolve(self, thread: Thread) -> None: ...

    def acknowledge(self, note: Note) -> None: ...

    def reactions(self, note: Note) -> list[tuple[int, str, str]]:
        return []

    def changes(self) -> ChangeSet:
        return parse(DIFF)

    def set_paused(self, paused: bool) -> None:
        STORE.paused = paused

    def publish(self) -> int:
        return 0


def open_target(target: Target, settings: ForgeSettings) -> ToyForge:
    return ToyForge(target, settings)


def check(settings: ForgeSettings, project: str | None, listener: str | None) -> list[Check]:
    return [Check.ok("toy forge", f"{project or 'no project'} reachable")]


def _authentic(secret: str | None, headers: Mapping[str, str], body: bytes) -> bool:
    given = headers.get("x-toy-token")
    return bool(secret and given and hmac.compare_digest(given.encode(), secret.encode()))


def _parse(event: str | None, payload: object) -> Accepted | Ignored:
    if event != "change":
        return Ignored(f"event {event!r} is not reviewed", "event")
    if not isinstance(payload, dict) or not isinstance(payload.get("number"), int):
        raise MalformedPayload("a change event has a number")
    request = QueuedRequest("toy", str(payload["project"]), payload["number"],
                            str(payload["head"]), "https://toy.example", json.dumps(payload))
    return Accepted(request, (str(payload["project"]),))


HOOK = Hook("REVIEWBOT_TOY_WEBHOOK_SECRET", "x-toy-event", _authentic, _parse)


def _settings(settings: Settings) -> ForgeSettings:
    return ForgeSettings("https://toy.example", "toy-token", True, 5, 0)


def register_toy() -> None:
    register(ForgeKind("toy", "~", _settings, f"{__name__}:open_target", f"{__name__}:check",
                       f"{__name__}:ToyThreads", f"{__name__}:HOOK"))
