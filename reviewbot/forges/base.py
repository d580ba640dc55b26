"""What the engine and the posting logic need from a forge, and nothing more.

Each forge's folder (gitlab/, github/; reviewbot.forges.registry names them) maps (path, side,
line) findings onto its own position format in its `positions` module; nothing outside it does
host-specific line arithmetic. Optional abilities are separate small protocols, detected with
isinstance() at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Protocol, runtime_checkable

from reviewbot.config import Settings
from reviewbot.context import Intent, LinkedIssue
from reviewbot.diff import ChangeSet, Side
from reviewbot.errors import EXIT_USAGE, ForgeError
from reviewbot.findings import Finding, Severity, topic
from reviewbot.forges.markers import FindingMarker
from reviewbot.withheld import SkippedFile

ForgeName = str  # a name in reviewbot.forges.registry


@dataclass(frozen=True)
class Target:
    """Which merge/pull request: its forge, project (GitLab id or path, GitHub owner/name) and
    number, and the forge's URL where it is not the settings' own (a listener's job)."""

    forge: ForgeName
    project: str
    number: int
    url: str | None = None



@dataclass(frozen=True)
class ForgeSettings:
    """What a forge adapter needs of the settings, and nothing more."""

    url: str
    token: str | None
    verify: bool | str  # TLS: on/off, or a CA bundle to verify with
    timeout: float
    retries: int
    bot_login: str = ""  # GitHub: the login an installation token writes as

    @classmethod
    def gitlab(cls, settings: Settings) -> ForgeSettings:
        return cls(settings.gitlab_url, settings.gitlab_token,
                   settings.ca_file or settings.ssl_verify, settings.request_timeout,
                   settings.retries)

    @classmethod
    def github(cls, settings: Settings) -> ForgeSettings:
        return cls(settings.github_url, settings.github_token,
                   settings.ca_file or settings.ssl_verify, settings.request_timeout,
                   settings.retries, settings.github_bot_login)


@dataclass(frozen=True)
class ChangeRequest:
    """A merge/pull request as fetched: its diff and the SHAs positions are built from."""

    forge: str  # a name in reviewbot.forges.registry, or "local"
    project: str  # GitLab project id/path or GitHub owner/name
    number: int
    title: str
    head_sha: str
    base_sha: str
    start_sha: str  # GitLab's diff_refs.start_sha; equal to base_sha elsewhere
    changes: ChangeSet
    skipped: tuple[SkippedFile, ...] = ()  # files the forge would not give us, with the reason
    web_url: str = ""
    description: str = ""
    commits: tuple[str, ...] = ()  # commit messages, oldest first

    @property
    def intent(self) -> Intent:
        return Intent(self.title, self.description, self.commits)


@dataclass(frozen=True)
class PostedComment:
    """A comment the bot posted earlier, recognised by its hidden marker."""

    id: str
    fingerprint: str
    path: str = ""
    resolved: bool = False  # resolved/outdated: a human closed it, or the bot did
    thread_id: str = ""
    # where it was anchored, when the forge tells: line on `side` ("new"/"old") at `head_sha`
    line: int | None = None
    side: Side | None = None  # None: the forge did not say
    head_sha: str = ""
    marker: FindingMarker | None = None  # what the comment says of its finding
    dismissed: bool = False  # a member withdrew it (`ignore`, 👎, a rebuttal the bot accepted)
    resolved_by_person: bool = False  # someone other than the bot resolved its thread
    resolved_by_author: bool = False  # … and that someone wrote the change

    def topic(self) -> tuple[str, str, str] | None:
        return topic(self.path, self.marker.category, self.marker.title) if self.marker else None

    def counted_though_resolved(self, author_may_dismiss: bool = False) -> bool:
        """Resolved by the change's own author only: the gate is the team's, so it still
        counts (unless the team lets authors dismiss, or a member dismissed it)."""
        return self.resolved and self.resolved_by_author and not author_may_dismiss \
            and not self.dismissed

    def open_finding(self, author_may_dismiss: bool = False) -> Finding | None:
        """The finding this thread still stands for, as the gate counts it (None for a thread
        the bot or a member other than the author resolved, or one written before markers
        carried a severity)."""
        m = self.marker
        counted = not self.resolved or self.counted_though_resolved(author_may_dismiss)
        if not counted or m is None or not m.severity:
            return None
        side = self.side or Side.NEW
        body = (AUTHOR_RESOLVED if self.resolved
                else "Still open from an earlier review of this change.")
        return Finding(path=self.path, line=self.line, side=side,
                       severity=Severity.parse(m.severity), title=m.title, body=body,
                       category=m.category or "bug", fingerprint=self.fingerprint)


AUTHOR_RESOLVED = ("Resolved by the change's author, still counted: a member other than the "
                   "author closes it (resolve, `ignore`, a thumbs-down).")


def still_open(existing: list[PostedComment], shown_now: set[str],
               author_may_dismiss: bool = False) -> list[Finding]:
    """The findings of the bot's threads that this review did not find again and that nobody
    but the change's author closed: the verdict keeps covering them until the code changes or
    a member other than the author resolves or dismisses the thread."""
    out = [c.open_finding(author_may_dismiss) for c in existing
           if c.fingerprint not in shown_now]
    return [f for f in out if f is not None]


@dataclass(frozen=True)
class PostOutcome:
    posted: list[Finding] = field(default_factory=list)
    moved_to_summary: list[Finding] = field(default_factory=list)  # the forge refused the position
    failed: list[Finding] = field(default_factory=list)  # not posted after retries
    errors: list[str] = field(default_factory=list)
    waiting: bool = False  # `posted` are drafts only the bot sees, until a member's `publish`


class Forge(Protocol):
    name: str

    def fetch(self) -> ChangeRequest: ...

    def fetch_incremental(self, since_sha: str, request: ChangeRequest) -> ChangeSet | None:
        """The diff from `since_sha` to the current head, or None if it cannot be computed."""
        ...

    def existing(self) -> list[PostedComment]:
        """Every comment carrying this bot's marker (all pages)."""
        ...

    def post(self, request: ChangeRequest, findings: list[Finding],
             hold: bool = False) -> PostOutcome:
        """`hold`: the findings wait as drafts until a member's `publish`."""
        ...

    def read_summary(self) -> str | None: ...

    def target_file(self, path: str) -> str | None:
        """A file as the target branch has it (None if absent): what the maintainers decided."""
        ...

    def write_summary(self, request: ChangeRequest, body: str) -> None: ...


@runtime_checkable
class FileReader(Protocol):
    """A forge that can read a file at a commit (for the code around a change)."""

    def file_at(self, path: str, ref: str) -> str | None: ...


@runtime_checkable
class IssueReader(Protocol):
    """Optional: the issues of the change's own project that it says it closes (or, on
    GitLab, relates to), as the forge links them; never another project's: the summary note
    would show its text to readers who may not see it."""

    def linked_issues(self) -> list[LinkedIssue]: ...


@runtime_checkable
class Voting(Protocol):
    """Optional: a forge that sends no event for a reaction; before a review the flow reads
    the ids of the bot's comments that carry a vote (GitHub)."""

    def voted(self) -> list[int]: ...


@runtime_checkable
class Resolver(Protocol):
    def resolve(self, comments: list[PostedComment]) -> None: ...


@runtime_checkable
class Keyed(Protocol):
    """Optional: the stable key a forge's project is known by (GitLab: its numeric id), and
    the other names people give it (GitLab: `group/app`)."""

    def project_key(self) -> str: ...

    def project_names(self) -> tuple[str, ...]: ...


@runtime_checkable
class ArchiveReader(Protocol):
    """A forge that can send a commit's archive (.tar.gz)."""

    def archive(self, sha: str, out: BinaryIO, max_bytes: int, deadline: float) -> None:
        """Write the archive of `sha` to `out`; ArchiveTooLarge past `max_bytes`,
        ArchiveTooSlow past `deadline` (time.monotonic)."""
        ...


@runtime_checkable
class CommentLimit(Protocol):
    """Optional: the longest comment the host takes (else summary.MAX_BODY)."""

    max_comment_chars: int


@runtime_checkable
class Previewer(Protocol):
    """Optional: the exact request bodies a forge would send, for --dry-run."""

    def preview(self, request: ChangeRequest, findings: list[Finding]) -> list[dict[str, object]]: ...


def unreadable_change(error: ForgeError, hints: dict[int, str]) -> ForgeError:
    """A refusal to read the change itself (401/403/404) means a wrong token, project or
    number: a usage error (exit 2) with the forge's hint of what to check."""
    hint = hints.get(error.status or 0)
    if hint is None:
        return error
    said = ForgeError(f"{error}: {hint}", status=error.status, body=error.body)
    said.exit_code = EXIT_USAGE
    return said
