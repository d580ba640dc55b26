"""Posting findings on a GitLab merge request: draft notes + one bulk publish, else discussions.

Reads and idempotent writes (PUT, bulk publish) are retried by python-gitlab
(`retry_transient_errors`, `obey_rate_limit` with Retry-After). Creating a note is not
idempotent: a 5xx or a lost connection may hide a note that was in fact created, so creations
are retried here, with exponential backoff and jitter, and only after checking (by the hidden
marker) that the note has not landed. A 400 means GitLab refused the position: that finding goes
to the summary. A note left behind by a crash is recognised by its marker on the next run.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import requests
from gitlab.exceptions import GitlabError

from reviewbot.errors import ForgeError, Refused, Unavailable, UsageError
from reviewbot.findings import Finding
from reviewbot.forges.base import ChangeRequest, PostedComment, PostOutcome
from reviewbot.forges.gitlab.positions import note_payload
from reviewbot.forges.markers import finding_marker
from reviewbot.redact import redact

log = logging.getLogger(__name__)

TRANSIENT = frozenset({None, 408, 409, 429, 500, 502, 503, 504})
REFUSED = frozenset({400, 422})


@dataclass
class WritePolicy:
    attempts: int = 5
    backoff: float = 0.5  # seconds, doubled per attempt, times a random factor in [0.5, 1.5)
    sleep: Callable[[float], None] = time.sleep
    rand: Callable[[], float] = random.random

    def write(self, create: Callable[[], object], landed: Callable[[], bool]) -> None:
        last = ""
        for attempt in range(self.attempts):
            try:
                create()
                return
            except GitlabError as exc:
                if exc.response_code in REFUSED:
                    raise Refused(str(exc.error_message)) from None
                if exc.response_code not in TRANSIENT:
                    raise ForgeError(f"GitLab refused the request: {exc.response_code} "
                                     f"{exc.error_message}", status=exc.response_code) from None
                last = f"{exc.response_code} {exc.error_message}"
            except requests.exceptions.RequestException as exc:
                last = type(exc).__name__
            if attempt + 1 < self.attempts:
                self.sleep(self.backoff * 2**attempt * (0.5 + self.rand()))
            if landed():
                return
        raise Unavailable(last)


def _fingerprint(body: str) -> str | None:
    meta = finding_marker(body)
    return meta.fingerprint if meta else None


class Poster:
    def __init__(self, mr: Any, policy: WritePolicy,
                 mine: Callable[[dict[str, Any]], bool], hold: bool = False) -> None:
        self.mr = mr
        self.policy = policy
        self.mine = mine  # is this note the bot's own? (someone else's marker proves nothing)
        self.hold = hold  # leave the drafts for a member's `publish`

    def post(self, request: ChangeRequest, findings: list[Finding]) -> PostOutcome:
        drafts = self._drafts()
        if drafts is None and self.hold:  # posting would skip the approval asked for
            log.warning("draft notes are unavailable: %d findings go to the summary instead",
                        len(findings))
            return PostOutcome(moved_to_summary=list(findings))
        if drafts is None:
            return self._send(request, findings, self._discussion, self._discussion_fps)
        reuse = self._tidy_drafts(drafts, request, {f.fingerprint for f in findings})
        rest = [f for f in findings if f.fingerprint not in reuse]
        outcome = self._send(request, rest, self._draft, self._draft_fps)
        drafted = [f for f in findings if f.fingerprint in reuse] + outcome.posted
        if self.hold:
            return replace(outcome, posted=drafted, waiting=True)
        if not drafted:
            return outcome
        try:
            self.mr.draft_notes.bulk_publish()
        except (GitlabError, requests.exceptions.RequestException) as exc:
            if isinstance(exc, GitlabError) and exc.response_code in REFUSED:
                return self._publish_one_by_one(request, drafted, outcome, exc)
            error = f"publishing {len(drafted)} draft notes failed: {_describe(exc)}"
            return PostOutcome([], outcome.moved_to_summary, outcome.failed + drafted,
                               outcome.errors + [error])
        return PostOutcome(drafted, outcome.moved_to_summary, outcome.failed, outcome.errors)

    def _publish_one_by_one(self, request: ChangeRequest, drafted: list[Finding],
                            outcome: PostOutcome, exc: GitlabError) -> PostOutcome:
        """GitLab refused the batch (one bad draft spoils it): drop our drafts and post each
        finding as its own discussion, so only the offender is refused."""
        log.warning("bulk publish refused (%s); posting %d discussions one by one",
                    redact(_describe(exc)), len(drafted))
        self._tidy_drafts(self._drafts() or [], None, set())
        single = self._send(request, drafted, self._discussion, self._discussion_fps)
        return PostOutcome(single.posted, outcome.moved_to_summary + single.moved_to_summary,
                           outcome.failed + single.failed, outcome.errors + single.errors)

    def _send(
        self,
        request: ChangeRequest,
        findings: list[Finding],
        create: Callable[[dict[str, Any]], object],
        present: Callable[[], set[str]],
    ) -> PostOutcome:
        out = PostOutcome()
        for i, f in enumerate(findings):
            file = request.changes.file(f.path)
            assert file is not None, f"{f.path} was validated against the diff"
            payload = note_payload(request, file, f)
            try:
                self.policy.write(lambda p=payload: create(p),  # type: ignore[misc]
                                  lambda fp=f.fingerprint: fp in present())  # type: ignore[misc]
            except Refused as exc:
                log.warning("GitLab refused the position of %s:%s (%s); moved to the summary",
                            f.path, f.line, redact(" ".join(str(exc).split())[:200]))
                out.moved_to_summary.append(f)
                continue
            except Unavailable as exc:
                out.failed.extend(findings[i:])
                out.errors.append(f"posting stopped after {len(out.posted)} of {len(findings)} "
                                  f"comments: GitLab kept failing ({exc})")
                break
            out.posted.append(f)
        return out

    # direct discussions
    def _discussion(self, payload: dict[str, Any]) -> object:
        return self.mr.discussions.create(payload, retry_transient_errors=False)

    def _discussion_fps(self) -> set[str]:
        found = set()
        for d in self.mr.discussions.list(get_all=True, per_page=100):
            for note in d.attributes.get("notes", []):
                fp = _fingerprint(note.get("body", "")) if self.mine(note) else None
                if fp:
                    found.add(fp)
        return found

    # draft notes
    def _draft(self, payload: dict[str, Any]) -> object:
        data = {"note": payload["body"], "position": payload["position"]}
        return self.mr.draft_notes.create(data, retry_transient_errors=False)

    def _draft_fps(self) -> set[str]:
        return {fp for d in self.mr.draft_notes.list(get_all=True, per_page=100)
                if (fp := _fingerprint(d.attributes.get("note", "")))}

    def _drafts(self) -> list[Any] | None:
        """This user's pending drafts, or None when drafts cannot be used here.

        Drafts are unusable when the API lacks them, or when the token's user has drafts of its
        own on this MR: bulk publishing would publish those too.
        """
        try:
            drafts = list(self.mr.draft_notes.list(get_all=True, per_page=100))
        except GitlabError as exc:
            if exc.response_code in (403, 404, 405):
                log.info("draft notes unavailable (%s); posting discussions directly", exc.response_code)
                return None
            raise ForgeError(f"listing draft notes failed: {_describe(exc)}",
                             status=exc.response_code) from None
        ours = [d for d in drafts if _fingerprint(d.attributes.get("note", ""))]
        if len(ours) < len(drafts):
            log.info("this user has unpublished drafts of its own; posting discussions directly")
            # drop the bot's leftovers, or the user's next "submit review" would publish them
            self._tidy_drafts(ours, None, set())
            return None
        return drafts

    def _tidy_drafts(self, drafts: list[Any], request: ChangeRequest | None,
                     wanted: set[str]) -> set[str]:
        """Keep this run's drafts left by an interrupted run; delete stale ones. Returns kept fps."""
        keep: set[str] = set()
        for d in drafts:
            fp = _fingerprint(d.attributes.get("note", ""))
            head = (d.attributes.get("position") or {}).get("head_sha")
            if request and fp in wanted and fp not in keep and head == request.head_sha:
                keep.add(fp)
                continue
            try:
                d.delete()
            except GitlabError as exc:
                if exc.response_code != 404:
                    raise ForgeError(f"deleting a stale draft note failed: {_describe(exc)}",
                                     status=exc.response_code) from None
        return keep


def publish_drafts(mr: Any) -> int:
    """Publish the bot's draft notes (a member's `publish`): how many there were. Refused when
    the account has drafts without the bot's marker: bulk publishing would post those too."""
    try:
        drafts = list(mr.draft_notes.list(get_all=True, per_page=100))
        if any(_fingerprint(d.attributes.get("note", "")) is None for d in drafts):
            raise UsageError("the bot's account has draft notes of its own on this merge "
                             "request: publish or delete them in GitLab first")
        if drafts:
            mr.draft_notes.bulk_publish()
    except (GitlabError, requests.exceptions.RequestException) as exc:
        raise ForgeError(f"publishing the draft notes failed: {_describe(exc)}") from None
    return len(drafts)


def resolve_threads(mr: Any, comments: list[PostedComment]) -> None:
    failed = []
    for c in comments:
        try:
            thread = mr.discussions.get(c.thread_id, lazy=True)
            thread.resolved = True
            thread.save()
        except (GitlabError, requests.exceptions.RequestException) as exc:
            failed.append(f"{c.thread_id} ({getattr(exc, 'response_code', type(exc).__name__)})")
    if failed:
        raise ForgeError(f"could not resolve {len(failed)} outdated threads: "
                         f"{', '.join(failed[:5])}")


def _describe(exc: GitlabError | requests.exceptions.RequestException) -> str:
    if isinstance(exc, GitlabError):
        return f"{exc.response_code} {' '.join(str(exc.error_message).split())[:300]}"
    return type(exc).__name__
