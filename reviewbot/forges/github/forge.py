"""GitHub pull requests over PyGithub: fetch the diff, post one review, keep one summary comment.

- Diff: diffs.py (the PR's diff view, else its listed files; incremental: compare).
- Comments: reviews with `event=COMMENT`, ≤ 30 inline comments each (post.py).
- Summary: one issue comment found by its hidden marker and edited in place.
- Outdated findings: GitHub's REST API cannot resolve review threads, so the bot edits its own
  comment into an "Outdated" note (original kept in a <details>), re-marked `state=outdated`.
"""

from __future__ import annotations

import logging
import math
from typing import Any, BinaryIO

from github import GithubException
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.PullRequestComment import PullRequestComment
from github.Repository import Repository
from requests import RequestException

from reviewbot.context import LinkedIssue
from reviewbot.diff import ChangeSet
from reviewbot.errors import ForgeError
from reviewbot.findings import Finding
from reviewbot.forges.base import ChangeRequest, ForgeSettings, PostedComment, PostOutcome
from reviewbot.forges.github import diffs
from reviewbot.forges.github.api import change_error, download_archive, forge_error, make_client
from reviewbot.forges.github.graphql import closing_issues, resolved_by
from reviewbot.forges.github.pending import drop_pending
from reviewbot.forges.github.positions import (
    fit_comment,
    outdated_body,
    posted_comment,
)
from reviewbot.forges.github.post import BATCH_SIZE, Poster, plan, review_body
from reviewbot.forges.markers import reply_marker, summary_marker
from reviewbot.withheld import SkippedFile

log = logging.getLogger(__name__)

_GH_ERRORS = (GithubException, RequestException)


class GitHubForge:
    name = "github"

    def __init__(self, settings: ForgeSettings, repo: str, number: int, **client: Any) -> None:
        """`client` goes to make_client (pacing and retry knobs; tests make them fast)."""
        self._repo_name = repo
        self._number = number
        self._batch_size = int(client.pop("batch_size", BATCH_SIZE))
        self._gh = make_client(settings, **client)
        self._repo: Repository | None = None
        self._pull: PullRequest | None = None
        self._comments: dict[str, PullRequestComment] = {}
        self._summary: IssueComment | None = None
        self._summary_read = False
        self._me: str | None = None
        self._me_id = 0  # unknown to an installation token: its comments are a Bot's anyway
        self._bot_login = settings.bot_login
        self._settings = settings

    def me(self) -> str:
        """The token's own login: only comments it wrote carry the bot's state.

        GET /user answers 403 to an installation token: the Actions `GITHUB_TOKEN` writes as
        `github-actions[bot]` (the default of `github_bot_login`), a custom App as `<slug>[bot]`.
        """
        if self._me is None:
            try:
                user = self._gh.get_user()
                self._me, self._me_id = str(user.login), int(user.id)
            except GithubException as exc:
                if exc.status != 403:
                    raise forge_error("reading the token's user", exc) from None
                self._me = self._bot_login
            except RequestException as exc:
                raise forge_error("reading the token's user", exc) from None
        return self._me

    def project_key(self) -> str:  # learnings are kept under the name `--repo` gives
        return self._repo_name

    def project_names(self) -> tuple[str, ...]:
        return ()

    def me_id(self) -> int:
        return self._me_id if self.me() is not None else 0

    def mine(self, comment: Any) -> bool:
        user = comment.user
        return user is not None and user.login == self.me()

    # --- fetching ----------------------------------------------------------------------------
    def pull(self) -> PullRequest:
        if self._pull is None:
            try:
                self._repo = self._gh.get_repo(self._repo_name)
                self._pull = self._repo.get_pull(self._number)
            except _GH_ERRORS as exc:
                raise change_error(f"reading {self._repo_name}#{self._number}", exc) from None
        return self._pull

    def repo(self) -> Repository:
        self.pull()
        assert self._repo is not None
        return self._repo

    def fetch(self) -> ChangeRequest:
        pr = self.pull()
        changes, skipped = self._diff(pr)
        return ChangeRequest(
            forge="github", project=self._repo_name, number=self._number, title=pr.title,
            head_sha=pr.head.sha, base_sha=pr.base.sha, start_sha=pr.base.sha,
            changes=changes, skipped=tuple(skipped), web_url=pr.html_url or "",
            description=pr.body or "", commits=self._commit_messages(pr),
        )

    def _commit_messages(self, pr: PullRequest) -> tuple[str, ...]:
        """The pull request's commit messages, oldest first (GitHub lists at most 250)."""
        try:
            return tuple(c.commit.message or "" for c in pr.get_commits())
        except _GH_ERRORS as exc:
            raise forge_error(f"listing the commits of {self._repo_name}#{self._number}",
                              exc) from None

    def _diff(self, pr: PullRequest) -> tuple[ChangeSet, list[SkippedFile]]:
        return diffs.of_pull(self._gh, pr, self._number)

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        """The changes from `since_sha` to the head, or None after a force-push or when too big."""
        return diffs.since(self.repo(), since_sha, request.head_sha)

    def target_file(self, path: str) -> str | None:
        """`path` at the PR's base commit: the maintainers' version, not the PR's."""
        return self.file_at(path, self.pull().base.sha)

    def linked_issues(self) -> list[LinkedIssue]:
        return closing_issues(self.pull(), self._repo_name)

    def archive(self, sha: str, out: BinaryIO, max_bytes: int,
                deadline: float = math.inf) -> None:
        """The repository at `sha` as .tar.gz: `GET /repos/{o}/{r}/tarball/{sha}` answers with
        a short-lived link (codeload), followed only when it stays on the forge's own hosts;
        ArchiveTooLarge as soon as more than `max_bytes` came."""
        try:
            link = self.repo().get_archive_link("tarball", sha)
        except _GH_ERRORS as exc:
            raise forge_error(f"asking for the archive at {sha[:12]}", exc) from None
        download_archive(link, self._settings, out, max_bytes, deadline)

    def file_at(self, path: str, ref: str) -> str | None:
        """A file's text at `ref`, or None when it has none there."""
        try:
            blob = self.repo().get_contents(path, ref=ref)
        except GithubException as exc:
            if exc.status == 404:
                return None
            raise forge_error(f"reading {path} at {ref[:12]}", exc) from None
        except RequestException as exc:
            raise forge_error(f"reading {path} at {ref[:12]}", exc) from None
        if isinstance(blob, list):  # a directory of that name
            return None
        return bytes(blob.decoded_content).decode("utf-8", "replace")

    # --- what is there -----------------------------------------------------------------------
    def existing(self) -> list[PostedComment]:
        try:
            comments = list(self.pull().get_review_comments())
        except _GH_ERRORS as exc:
            raise forge_error("listing review comments", exc) from None
        dismissed = {c.in_reply_to_id for c in comments if self.mine(c)
                     and (m := reply_marker(c.body)) is not None and m.dismissed}
        resolved = resolved_by(self.pull(), self.repo().full_name)
        author = self.pull().user.login if self.pull().user is not None else ""
        out = []
        for c in comments:
            posted = (posted_comment(c, c.id in dismissed, resolved.get(c.id), self.me(), author)
                      if self.mine(c) else None)
            if posted is not None:
                self._comments[posted.id] = c
                out.append(posted)
        return out

    def voted(self) -> list[int]:
        """The bot's open findings that someone reacted 👍 or 👎 to (GitHub's rollup)."""
        return [int(p.id) for p in self.existing() if not (p.resolved or p.dismissed)
                and any((self._comments[p.id].reactions or {}).get(k) for k in ("+1", "-1"))]

    def read_summary(self) -> str | None:
        self._summary_read = True  # once read, a summary comment of ours is known
        try:
            for c in self.pull().get_issue_comments():
                if self.mine(c) and summary_marker(c.body) is not None:
                    self._summary = c
                    return c.body
        except _GH_ERRORS as exc:
            raise forge_error("listing PR comments", exc) from None
        return None

    # --- writing -----------------------------------------------------------------------------
    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        batches, unanchored = plan(findings, request.changes, self._batch_size)
        if hold:  # GitHub keeps one pending review per user: this run's
            drop_pending(self.pull(), self.me())
        if not batches:
            return PostOutcome(moved_to_summary=unanchored)
        try:
            commit = self.repo().get_commit(request.head_sha)
        except _GH_ERRORS as exc:
            raise forge_error(f"reading commit {request.head_sha[:12]}", exc) from None
        poster = Poster(self.pull(), commit, lambda: {c.fingerprint for c in self.existing()})
        if hold:
            poster.hold([item for batch in batches for item in batch])
        else:
            poster.run(batches)
        return poster.outcome(unanchored)

    def preview(self, request: ChangeRequest, findings: list[Finding]) -> list[dict[str, object]]:
        """The exact review bodies `post` would send (for --dry-run)."""
        batches, _ = plan(findings, request.changes, self._batch_size)
        return [{"commit_id": request.head_sha, "event": "COMMENT",
                 "body": review_body(len(b), request.head_sha), "comments": [c for _, c in b]}
                for b in batches]

    def write_summary(self, request: ChangeRequest, body: str) -> None:
        self.write_summary_text(body)

    def write_summary_text(self, body: str) -> None:
        body = fit_comment(body)
        try:
            if self._summary is None and not self._summary_read:
                self.read_summary()
            if self._summary is not None:
                self._summary.edit(body)
            else:
                self._summary = self.pull().create_issue_comment(body)
        except _GH_ERRORS as exc:
            raise forge_error("writing the summary comment", exc) from None

    def resolve(self, comments: list[PostedComment]) -> None:
        """Mark the bot's own comments outdated by editing them (REST cannot resolve threads)."""
        errors = []
        for posted in comments:
            try:
                c = self._comments.get(posted.id) or self.pull().get_review_comment(int(posted.id))
                c.edit(outdated_body(c.body, posted.fingerprint))
            except _GH_ERRORS as exc:
                errors.append(forge_error(f"marking comment {posted.id} outdated", exc).message)
        if errors:
            raise ForgeError(f"{len(errors)} of {len(comments)} outdated comments not marked: "
                             f"{errors[0]}")
