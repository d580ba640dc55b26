"""GitLab merge requests over python-gitlab: fetch the diff, post, resolve, keep one summary note."""

from __future__ import annotations

import io
import logging
import math
from typing import Any, BinaryIO

import gitlab
import requests
from gitlab.exceptions import GitlabError

from reviewbot.archive import ArchiveTooLarge, copy_bounded
from reviewbot.context import LinkedIssue
from reviewbot.diff import ChangeSet, FileDiff, parse
from reviewbot.errors import DiffError, ForgeError, Refused, Unavailable
from reviewbot.findings import Finding
from reviewbot.forges.base import (
    ChangeRequest,
    ForgeSettings,
    PostedComment,
    PostOutcome,
    unreadable_change,
)
from reviewbot.forges.gitlab import diffs, issues
from reviewbot.forges.gitlab.api import HINTS, call, call_json, client, forge_error
from reviewbot.forges.gitlab.positions import note_payload, posted_comment
from reviewbot.forges.gitlab.post import Poster, WritePolicy, resolve_threads
from reviewbot.forges.markers import reply_marker, summary_marker
from reviewbot.redact import redact
from reviewbot.tree import MAX_FILE_BYTES
from reviewbot.withheld import SkippedFile

log = logging.getLogger(__name__)


class GitLabForge:
    name = "gitlab"
    max_comment_chars = 1_000_000

    def __init__(self, gl: gitlab.Gitlab, project: str | int, iid: int,
                 policy: WritePolicy | None = None) -> None:
        self.gl = gl
        self.project_id = project
        self.iid = iid
        self.project = gl.projects.get(project, lazy=True)
        self.mr = self.project.mergerequests.get(iid, lazy=True)
        self.policy = policy or WritePolicy()
        self._summary_id: int | None = None
        self._summary_read = False  # once read, a summary note of ours is known by its id
        self._meta: Any = None
        self._me: int | None = None

    def me(self) -> int:
        """The token's own user id (GET /user): only notes it wrote carry the bot's state."""
        if self._me is None:
            call(self.gl.auth, "reading the token's user")
            user = self.gl.user
            if user is None or not isinstance(user.attributes.get("id"), int):
                raise ForgeError("GitLab: GET /user did not name the token's user")
            self._me = int(user.attributes["id"])
        return self._me

    def mine(self, note: dict[str, Any]) -> bool:
        author = note.get("author")
        return isinstance(author, dict) and author.get("id") == self.me() \
            and not note.get("system")

    def project_key(self) -> str:
        """The project's numeric id, however it was named: what its learnings are kept under."""
        meta = self.merge_request()
        return str(meta.attributes.get("project_id") or self.project_id)

    def project_names(self) -> tuple[str, ...]:
        """The project's path (from the merge request's `references.full`, `group/app!7`)."""
        references = self.merge_request().attributes.get("references")
        full = references.get("full") if isinstance(references, dict) else None
        return (full.rpartition("!")[0],) if isinstance(full, str) and "!" in full else ()

    def merge_request(self, fresh: bool = False) -> Any:
        """The MR as GitLab has it: read anew by `fetch` (a review's start), else reused."""
        if self._meta is None or fresh:
            try:
                self._meta = call(lambda: self.project.mergerequests.get(self.iid),
                                  "reading the merge request")
            except ForgeError as exc:
                raise unreadable_change(exc, HINTS) from None
        return self._meta

    @classmethod
    def from_settings(cls, settings: ForgeSettings, project: str | int, iid: int) -> GitLabForge:
        return cls(client(settings), project, iid)

    # fetching
    def fetch(self) -> ChangeRequest:
        meta = self.merge_request(fresh=True)
        refs = meta.attributes.get("diff_refs") or {}
        if not all(refs.get(k) for k in ("base_sha", "start_sha", "head_sha")):
            raise ForgeError(f"merge request !{self.iid} has no complete diff_refs yet "
                             "(GitLab is still preparing its diff); try again in a minute")
        objects, overflow = self._diff_objects()
        files, missing, skipped = diffs.convert(objects)
        overflow = overflow or str(meta.attributes.get("changes_count") or "").endswith("+")
        if missing or overflow:
            extra, skipped_more = self._refetch(missing, {f.path for f in files}, overflow)
            files += extra
            skipped += skipped_more
        return ChangeRequest(
            forge="gitlab", project=str(self.project_id), number=self.iid,
            title=str(meta.attributes.get("title", "")), head_sha=refs["head_sha"],
            base_sha=refs["base_sha"], start_sha=refs["start_sha"],
            changes=ChangeSet(tuple(files)), skipped=tuple(skipped),
            web_url=str(meta.attributes.get("web_url", "")),
            description=str(meta.attributes.get("description") or ""),
            commits=self._commit_messages(),
        )

    def _commit_messages(self) -> tuple[str, ...]:
        """The merge request's commit messages, oldest first (GitLab lists the newest first)."""
        commits = call(lambda: list(self.mr.commits(get_all=True)), "listing the commits")
        return tuple(str(getattr(c, "message", "") or getattr(c, "title", ""))
                     for c in reversed(commits))

    def _diff_objects(self) -> tuple[list[dict[str, Any]], bool]:
        """The paginated `/diffs` (GitLab 15.7+), else the older `/changes`; and its overflow."""
        try:
            return list(self.gl.http_list(self._mr_path("diffs"), get_all=True,
                                          per_page=100)), False
        except GitlabError as exc:
            if exc.response_code != 404:
                raise forge_error(exc, "listing the diffs") from None
        changes = call_json(lambda: self.mr.changes(access_raw_diffs="true"), "reading the changes")
        return list(changes.get("changes", [])), bool(changes.get("overflow"))

    def _refetch(self, missing: list[dict[str, Any]], have: set[str],
                 overflow: bool) -> tuple[list[FileDiff], list[SkippedFile]]:
        """Collapsed/too-large files and overflow: `/changes?access_raw_diffs=true`, then
        `/raw_diffs`; whatever is still missing is reported as skipped, with the reason."""
        wanted = {diffs.api_path(d): diffs.missing_reason(d) or "" for d in missing}
        changes = call_json(lambda: self.mr.changes(access_raw_diffs="true"), "reading the changes")
        got: dict[str, FileDiff] = {}
        for d in changes.get("changes", []):
            path = diffs.api_path(d)
            if (path in wanted or path not in have) and not diffs.missing_reason(d):
                try:
                    got[path] = diffs.file_diff(d)
                except DiffError:
                    continue
        if set(wanted) - set(got) or changes.get("overflow"):
            for f in self._raw_files():
                if f.path not in have and f.path not in got:
                    got[f.path] = f
        skipped = [SkippedFile(p, reason) for p, reason in wanted.items() if p not in got]
        if overflow and changes.get("overflow") and not got:
            skipped.append(SkippedFile("(more files)", "GitLab reported more changed files than "
                                       "it returned (overflow); they were not reviewed"))
        return list(got.values()), skipped

    def _raw_files(self) -> list[FileDiff]:
        try:
            raw = self.gl.http_get(self._mr_path("raw_diffs"), raw=True)
            if not isinstance(raw, requests.Response):
                return []
            return list(parse(raw.content).files)
        except (GitlabError, DiffError) as exc:
            log.info("raw_diffs unavailable: %s", redact(str(exc)))
            return []

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        commits = call(lambda: self.mr.commits(get_all=True, per_page=100), "listing commits")
        if since_sha not in {c.id for c in commits}:
            return None  # force-pushed or rebased: the old head is not part of this MR any more
        cmp = call_json(lambda: self.project.repository_compare(since_sha, request.head_sha),
                        "comparing commits")
        if cmp.get("compare_timeout"):
            return None
        files, missing, broken = diffs.convert(cmp.get("diffs", []))
        in_mr = {p for f in request.changes.files for p in (f.old_path, f.new_path) if p}
        out = [f for f in files if f.path in in_mr]
        for path in [diffs.api_path(d) for d in missing] + [s.path for s in broken]:
            full = request.changes.file(path)  # no incremental diff for it: review all of it
            if full is not None:
                out.append(full)
        return ChangeSet(tuple(out))

    def linked_issues(self) -> list[LinkedIssue]:
        return issues.linked(self.gl, self._mr_path, self.project_key())

    def file_at(self, path: str, ref: str) -> str | None:
        """A file's text at `ref` (e.g. the head SHA), for extra context; None if it is absent
        or larger than MAX_FILE_BYTES (read no further than that: the file is the author's)."""
        buffer = io.BytesIO()
        try:
            chunks = self.project.files.raw(file_path=path, ref=ref, streamed=True,
                                            iterator=True, chunk_size=65536)
            copy_bounded(chunks, buffer, MAX_FILE_BYTES)
        except ArchiveTooLarge:
            return None
        except GitlabError as exc:
            if exc.response_code == 404:
                return None
            raise ForgeError(f"GitLab: reading {path} failed: {exc.response_code}",
                             status=exc.response_code) from None
        except requests.RequestException as exc:
            raise ForgeError(f"GitLab: reading {path} failed: {type(exc).__name__}") from None
        return buffer.getvalue().decode("utf-8", "replace")

    def archive(self, sha: str, out: BinaryIO, max_bytes: int,
                deadline: float = math.inf) -> None:
        """The repository at `sha` as .tar.gz (`GET …/repository/archive.tar.gz?sha=`), written
        to `out`; ArchiveTooLarge as soon as more than `max_bytes` came."""
        chunks = call(lambda: self.project.repository_archive(
            sha=sha, format="tar.gz", streamed=True, iterator=True, chunk_size=65536),
            "downloading the repository archive")
        call(lambda: copy_bounded(chunks, out, max_bytes, deadline),
             "downloading the repository archive")

    def target_file(self, path: str) -> str | None:
        """`path` as the target branch has it (diff_refs.start_sha): the maintainers' version,
        not the merge request's."""
        meta = self.merge_request()
        ref = (meta.attributes.get("diff_refs") or {}).get("start_sha") \
            or meta.attributes.get("target_branch")
        if not ref:
            raise ForgeError(f"merge request !{self.iid} names no target branch")
        return self.file_at(path, str(ref))

    # existing comments
    def existing(self) -> list[PostedComment]:
        found = []
        owner = self.merge_request().attributes.get("author")
        author = owner.get("id") if isinstance(owner, dict) else None
        for d in call(lambda: self.mr.discussions.list(get_all=True, per_page=100),
                       "listing discussions"):
            notes = d.attributes.get("notes", [])
            dismissed = any(self.mine(n) and (m := reply_marker(n.get("body"))) is not None
                            and m.dismissed for n in notes)
            found += [posted for note in notes if self.mine(note) and (
                posted := posted_comment(note, str(d.id), dismissed, self.me(), author))]
        return found

    # posting
    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        return Poster(self.mr, self.policy, self.mine, hold).post(request, findings)

    def preview(self, request: ChangeRequest, findings: list[Finding]) -> list[dict[str, object]]:
        return [note_payload(request, file, f) for f in findings
                if (file := request.changes.file(f.path)) is not None]

    def resolve(self, comments: list[PostedComment]) -> None:
        resolve_threads(self.mr, comments)

    # the summary note
    def read_summary(self) -> str | None:
        self._summary_read = True
        for note in call(lambda: self.mr.notes.list(get_all=True, per_page=100, sort="asc"),
                          "listing notes"):
            body = note.attributes.get("body", "")
            if self.mine(note.attributes) and summary_marker(body) is not None:
                self._summary_id = note.id
                return str(body)
        return None

    def write_summary(self, request: ChangeRequest, body: str) -> None:
        self.write_summary_text(body)

    def write_summary_text(self, body: str) -> None:
        if self._summary_id is None and not self._summary_read:
            self.read_summary()
        if self._summary_id is not None:
            note = self.mr.notes.get(self._summary_id, lazy=True)
            note.body = body
            call(note.save, "updating the summary note")
            return
        try:
            self.policy.write(lambda: self.mr.notes.create({"body": body},
                                                           retry_transient_errors=False),
                              lambda: self.read_summary() is not None)
        except (Refused, Unavailable) as exc:
            raise ForgeError(f"writing the summary note failed: {exc}") from None

    def _mr_path(self, tail: str) -> str:
        return f"/projects/{self.project.encoded_id}/merge_requests/{self.iid}/{tail}"
