"""Posting inline comments as GitHub reviews, without losing the good ones to one bad one.

A review is all-or-nothing: one comment GitHub cannot anchor rejects it with 422 and does not
say which. Positions are validated against the ChangeSet first (positions.review_comment);
if GitHub still answers 422 about a position, the batch is bisected until the offender is
alone, and that one goes to the summary. At most `batch_size` comments per review request
(reviewdog uses 30). After a 5xx on the POST (never retried blindly: it may have landed), the
review comments are re-read and only what is missing is reported as failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from github import GithubException
from github.Commit import Commit
from github.PullRequest import PullRequest, ReviewComment
from github.PullRequestReview import PullRequestReview
from requests import RequestException

from reviewbot.diff import ChangeSet
from reviewbot.findings import Finding
from reviewbot.forges.base import PostOutcome
from reviewbot.forges.github.api import error_text, forge_error
from reviewbot.forges.github.positions import review_comment

log = logging.getLogger(__name__)

BATCH_SIZE = 30
MAX_PROBES = 60  # comments tried one by one after a pending review was refused
# a 422 that names these is about the review as a whole (e.g. a commit that is not part of the
# PR any more): splitting the batch cannot help. Any other 422 (`line must be part of the diff`,
# `start line must be part of the same hunk`, `Line could not be resolved`, `Body is too long`,
# and wordings we do not know) is blamed on a comment and bisected.
_REVIEW_ERRORS = ("commit", "event", "submitted too quickly")

Item = tuple[Finding, dict[str, Any]]


def plan(findings: list[Finding], changes: ChangeSet,
         batch_size: int = BATCH_SIZE) -> tuple[list[list[Item]], list[Finding]]:
    """(batches of (finding, comments[] entry), findings GitHub could not anchor).

    The posting flow has placed the findings already (reviewbot.anchoring, which also keeps
    an incremental review's old-side findings off GitHub's LEFT side).
    """
    items: list[Item] = []
    unanchored: list[Finding] = []
    for f in findings:
        comment = review_comment(f, changes)
        if comment is None:
            unanchored.append(f)
        else:
            items.append((f, comment))
    return [items[i:i + batch_size] for i in range(0, len(items), batch_size)], unanchored


def review_body(count: int, head_sha: str) -> str:
    return f"reviewbot: {count} comment{'s' if count != 1 else ''} on `{head_sha[:12]}`"


@dataclass
class Poster:
    pull: PullRequest
    commit: Commit
    landed: Callable[[], set[str]]  # fingerprints of the bot's review comments now on the PR
    posted: list[Finding] = field(default_factory=list)
    moved: list[Finding] = field(default_factory=list)
    failed: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stopped: bool = False
    waiting: bool = False  # held in a pending review

    def run(self, batches: list[list[Item]]) -> None:
        for batch in batches:
            if self.stopped:
                self.failed += [f for f, _ in batch]
            else:
                self.submit(batch)

    def hold(self, items: list[Item], probed: bool = False) -> None:
        """All in one pending review, which only the bot sees until a member's `publish`. One
        refused comment spoils it and a second pending review is refused, so after a 422 each
        comment is tried alone in a pending review deleted at once, and the rest posted."""
        self.waiting = True
        try:
            self._review(items, None)
        except GithubException as exc:
            if exc.status != 422 or probed or any(s in error_text(exc) for s in _REVIEW_ERRORS):
                self.give_up(items, forge_error("posting a pending review", exc).message,
                             check=False)
                return
            good = [item for item in items[:MAX_PROBES] if self._fits(item)]
            self.moved += [f for f, c in items if (f, c) not in good]
            if good:
                self.hold(good, probed=True)
            return
        except RequestException as exc:
            self.give_up(items, forge_error("posting a pending review", exc).message, check=False)
            return
        self.posted += [f for f, _ in items]

    def _fits(self, item: Item) -> bool:
        try:
            self._review([item], None).delete()
        except GithubException as exc:
            if exc.status == 422:
                return False
            raise forge_error("trying a review comment", exc) from None
        return True

    def _review(self, items: list[Item], event: str | None) -> PullRequestReview:
        return self.pull.create_review(
            commit=self.commit, body=review_body(len(items), self.commit.sha),
            comments=[cast(ReviewComment, c) for _, c in items],
            **({"event": event} if event else {}))

    def submit(self, batch: list[Item]) -> None:
        try:
            self._review(batch, "COMMENT")
        except GithubException as exc:
            self.refused(batch, exc)
            return
        except RequestException as exc:
            self.give_up(batch, forge_error("posting a review", exc).message, check=True)
            return
        self.posted += [f for f, _ in batch]

    def refused(self, batch: list[Item], exc: GithubException) -> None:
        if exc.status == 422 and not any(s in error_text(exc) for s in _REVIEW_ERRORS):
            if len(batch) == 1:
                f, c = batch[0]
                log.warning("GitHub refused the comment on %s line %s (moved to the summary): %s",
                            c["path"], c["line"], forge_error("a review comment", exc).message)
                self.moved.append(f)
                return
            mid = len(batch) // 2
            self.submit(batch[:mid])
            self.submit(batch[mid:])
            return
        self.give_up(batch, forge_error("posting a review", exc).message,
                     check=exc.status is not None and exc.status >= 500)

    def give_up(self, batch: list[Item], message: str, *, check: bool) -> None:
        """Stop posting, unless `check` finds that the whole batch landed despite the error."""
        landed: set[str] = set()
        if check:
            try:
                landed = self.landed()
            except (GithubException, RequestException) as exc:
                self.errors.append(forge_error("re-reading review comments", exc).message)
        for f, _ in batch:
            (self.posted if f.fingerprint in landed else self.failed).append(f)
        if all(f.fingerprint in landed for f, _ in batch):
            log.warning("%s, but the review was created", message)
            return
        self.stopped = True
        self.errors.append(message)

    def outcome(self, unanchored: list[Finding]) -> PostOutcome:
        return PostOutcome(posted=self.posted, moved_to_summary=unanchored + self.moved,
                           failed=self.failed, errors=self.errors, waiting=self.waiting)
