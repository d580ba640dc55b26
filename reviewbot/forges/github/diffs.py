"""A pull request's diff from GitHub → ChangeSet.

- The raw `application/vnd.github.v3.diff` of the PR; on a 406 (> 300 files or > 20,000 lines)
  the `/files` list (≤ 3,000): its entries become unified diff text (`files_to_diff`), so the one
  diff parser (`reviewbot.diff.parse`) does all line arithmetic; an entry without a `patch`
  (binary, or too large for GitHub) comes back as a skipped file.
- Incremental: compare from the last reviewed head, or None where a full review is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from github import Github, GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository
from requests import RequestException

from reviewbot.diff import ChangeSet, parse
from reviewbot.forges.github.api import forge_error
from reviewbot.withheld import SkippedFile

log = logging.getLogger(__name__)

DIFF_MEDIA_TYPE = "application/vnd.github.v3.diff"
MAX_LISTED_FILES = 3000
MAX_COMPARE_FILES = 300
NO_PATCH = "GitHub sent no patch for this file (binary, empty, or its diff is too large)"
_GH_ERRORS = (GithubException, RequestException)


def of_pull(gh: Github, pr: PullRequest, number: int) -> tuple[ChangeSet, list[SkippedFile]]:
    """The whole pull request: its diff view, else its listed files."""
    try:
        _, data = gh.requester.requestJsonAndCheck("GET", pr.url,
                                                   headers={"Accept": DIFF_MEDIA_TYPE})
    except GithubException as exc:
        if exc.status != 406:
            raise forge_error(f"reading the diff of #{number}", exc) from None
        log.info("the diff of #%s is too large for GitHub's diff view; listing its files", number)
        return listed(pr, number)
    except RequestException as exc:
        raise forge_error(f"reading the diff of #{number}", exc) from None
    raw = (data or {}).get("data", "") if isinstance(data, dict) else ""
    return (parse(raw) if raw.strip() else ChangeSet()), []


def listed(pr: PullRequest, number: int) -> tuple[ChangeSet, list[SkippedFile]]:
    try:
        entries = [file_entry(f) for f in pr.get_files()]
    except _GH_ERRORS as exc:
        raise forge_error(f"listing the files of #{number}", exc) from None
    text, skipped = files_to_diff(entries)
    missing = (pr.changed_files or 0) - len(entries)
    if missing > 0:
        skipped.append(SkippedFile(f"({missing} more files)",
                                   f"GitHub lists at most {MAX_LISTED_FILES} files of a PR"))
    return (parse(text) if text else ChangeSet()), skipped


def since(repo: Repository, since_sha: str, head_sha: str) -> ChangeSet | None:
    """The changes from `since_sha` to the head, or None after a force-push or when too big."""
    try:
        cmp = repo.compare(since_sha, head_sha)
        status, files = cmp.status, list(cmp.files)
    except _GH_ERRORS as exc:
        log.info("incremental diff unavailable (%s); reviewing everything",
                 forge_error("comparing", exc))
        return None
    if status == "identical":
        return ChangeSet()
    entries = [file_entry(f) for f in files]
    if status != "ahead" or len(files) >= MAX_COMPARE_FILES or any(
            e.patch is None and e.changes for e in entries):
        # history rewritten, more files than compare lists, or a text diff GitHub left out:
        # the full review reports skipped files; an incremental one could not
        return None
    text, _ = files_to_diff(entries)
    return parse(text) if text else ChangeSet()


@dataclass(frozen=True)
class FileEntry:
    """What `/pulls/{n}/files` and compare say about one file."""

    filename: str
    status: str  # added | removed | modified | renamed | copied | changed | unchanged
    patch: str | None
    previous_filename: str | None = None
    changes: int = 0


def files_to_diff(entries: Iterable[FileEntry]) -> tuple[str, list[SkippedFile]]:
    parts: list[str] = []
    skipped: list[SkippedFile] = []
    for e in entries:
        old = e.previous_filename if e.status == "renamed" and e.previous_filename else e.filename
        new = e.filename
        head = [f"diff --git a/{old} b/{new}"]
        if e.status in ("added", "copied"):
            head.append("new file mode 100644")
        elif e.status == "removed":
            head.append("deleted file mode 100644")
        elif old != new:
            head += [f"rename from {old}", f"rename to {new}"]
        src = "/dev/null" if e.status in ("added", "copied") else f"a/{old}"
        dst = "/dev/null" if e.status == "removed" else f"b/{new}"
        if e.patch:
            patch = e.patch if e.patch.endswith("\n") else e.patch + "\n"
            parts.append("\n".join(head + [f"--- {src}", f"+++ {dst}"]) + "\n" + patch)
        elif e.status != "renamed" or e.changes:
            parts.append("\n".join(head + [f"Binary files {src} and {dst} differ"]) + "\n")
            skipped.append(SkippedFile(e.filename, NO_PATCH))
        else:  # a pure rename: no lines to comment on
            parts.append("\n".join(head) + "\n")
    return "".join(parts), skipped


def file_entry(f: Any) -> FileEntry:
    return FileEntry(filename=f.filename, status=f.status, patch=f.patch,
                     previous_filename=f.previous_filename, changes=f.changes or 0)
