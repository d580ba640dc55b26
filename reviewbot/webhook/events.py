"""Turn an authenticated webhook payload into a `QueuedRequest`, or a reason to ignore it.

Pure functions over parsed JSON: no I/O, no settings. A payload that claims to be a
merge/pull request event but lacks the fields we need raises `MalformedPayload` (→ 400).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from reviewbot.errors import MalformedPayload
from reviewbot.forges.markers import decode
from reviewbot.webhook.jobs import QueuedRequest

GITLAB_ACTIONS = ("open", "reopen", "update")
VOTES = ("thumbsup", "thumbsdown")  # GitLab's names of the emoji the bot takes as votes
GITHUB_ACTIONS = ("opened", "synchronize", "reopened")
GITHUB_COMMENTS = ("issue_comment", "pull_request_review_comment")
ISSUE = "issue"  # a GitHub job's discussion_id: a comment on the conversation tab


@dataclass(frozen=True)
class Ignored:
    reason: str  # one line, shown to the forge in the 200 answer
    label: str  # a fixed word for the metrics label


@dataclass(frozen=True)
class Accepted:
    request: QueuedRequest
    # what the allow-list is matched against, each a name the forge API resolves: the job
    # reviews the name that matched, so a payload cannot pair an allowed name with another id
    names: tuple[str, ...]


def _field(obj: object, path: str) -> object:
    cur = obj
    for key in path.split("."):
        if not isinstance(cur, dict) or key not in cur:
            raise MalformedPayload(f"payload lacks {path}")
        cur = cur[key]
    return cur


def _str(obj: object, path: str) -> str:
    value = _field(obj, path)
    if not isinstance(value, str) or not value:
        raise MalformedPayload(f"{path} must be a non-empty string")
    return value


_MAX_ID = 2**63 - 1  # SQLite's INTEGER, and far beyond any forge's ids
_SHA = re.compile(r"[0-9a-f]{7,64}")
_DISCUSSION = re.compile(r"[0-9a-zA-Z]{1,64}")


def _int(obj: object, path: str) -> int:
    value = _field(obj, path)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_ID:
        raise MalformedPayload(f"{path} must be an integer from 0 to 2**63 - 1")
    return value


def _sha(obj: object, path: str) -> str:
    value = _str(obj, path)
    if not _SHA.fullmatch(value):
        raise MalformedPayload(f"{path} must be a hexadecimal commit SHA")
    return value


def event_key(name: str, number: int, before: object, head_sha: str, action: str) -> str:
    """What de-duplicates a delivery: the event itself, never a header. Neither GitLab's
    `Idempotency-Key` nor GitHub's `X-GitHub-Delivery` is covered by the token or the
    signature, so a replay under a fresh one must not count as a new event (it would supersede
    the running review of the same push). The push's old head is part of the event, so a
    force-push back to an earlier head is a new one."""
    old = before if isinstance(before, str) and _SHA.fullmatch(before) else ""
    return f"{name.lower()}#{number}@{old}..{head_sha}/{action}"


def gitlab_base_url(web_url: str, path_with_namespace: str) -> str:
    """`https://host[/prefix]/group/project` → `https://host[/prefix]`."""
    suffix = "/" + path_with_namespace.strip("/")
    trimmed = web_url.rstrip("/")
    if path_with_namespace and trimmed.endswith(suffix):
        return trimmed[: -len(suffix)]
    parts = urlsplit(web_url)
    if not parts.scheme or not parts.netloc:
        raise MalformedPayload("project.web_url is not an absolute URL")
    return f"{parts.scheme}://{parts.netloc}"


def github_api_base(repo_url: str, full_name: str) -> str:
    """`https://api.github.com/repos/o/r` → `https://api.github.com` (GHES: `…/api/v3`)."""
    suffix = "/repos/" + full_name
    trimmed = repo_url.rstrip("/")
    if trimmed.lower().endswith(suffix.lower()):
        return trimmed[: -len(suffix)]
    raise MalformedPayload("repository.url does not end with /repos/<full_name>")


def _project(payload: dict[str, object]) -> tuple[int, str]:
    """A GitLab payload's project id, and its path ("" when it gives none)."""
    project = payload.get("project")
    path = project.get("path_with_namespace") if isinstance(project, dict) else None
    return _int(payload, "project.id"), path if isinstance(path, str) else ""


def parse_gitlab(event: str | None, payload: object) -> Accepted | Ignored:
    if event == "Note Hook":
        return parse_gitlab_note(payload)
    if event == "Emoji Hook":
        return parse_gitlab_emoji(payload)
    if event != "Merge Request Hook":
        return Ignored(f"event {event!r} is not reviewed", "event")
    if not isinstance(payload, dict) or payload.get("object_kind") != "merge_request":
        raise MalformedPayload("a Merge Request Hook must have object_kind merge_request")
    attrs = _field(payload, "object_attributes")
    if not isinstance(attrs, dict):
        raise MalformedPayload("object_attributes must be an object")
    action = attrs.get("action")
    if action not in GITLAB_ACTIONS:
        return Ignored(f"action {action!r} is not reviewed", "action")
    if action == "update" and not attrs.get("oldrev"):
        return Ignored("update without oldrev (not a push) is not reviewed", "action")
    project_id, path = _project(payload)
    number = _int(payload, "object_attributes.iid")
    head_sha = _sha(payload, "object_attributes.last_commit.id")
    request = QueuedRequest(
        forge="gitlab",
        project=str(project_id),
        number=number,
        head_sha=head_sha,
        base_url=gitlab_base_url(_str(payload, "project.web_url"), path),
        delivery_id=event_key(str(project_id), number, attrs.get("oldrev"), head_sha, action),
    )
    return Accepted(request, (str(project_id), path))


def parse_gitlab_note(payload: object) -> Accepted | Ignored:
    """A note on a merge request, queued to be answered when it may be for the bot: it
    mentions someone, or it is in a diff thread (the bot's threads are). Whether it really is
    for the bot, and from a member, the job decides through the API, never from the payload."""
    if not isinstance(payload, dict) or payload.get("object_kind") != "note":
        raise MalformedPayload("a Note Hook must have object_kind note")
    attrs = _field(payload, "object_attributes")
    if not isinstance(attrs, dict):
        raise MalformedPayload("object_attributes must be an object")
    if attrs.get("noteable_type") != "MergeRequest":
        return Ignored("only notes on merge requests are answered", "noteable")
    if attrs.get("system"):
        return Ignored("system notes are not answered", "system")
    body = attrs.get("note")
    if isinstance(body, str) and decode(body) is not None:  # only the bot writes its markers
        return Ignored("the bot's own note", "own")
    if not (isinstance(body, str) and "@" in body) and attrs.get("type") != "DiffNote":
        return Ignored("a note that mentions no one, outside a diff thread", "not-addressed")
    discussion = attrs.get("discussion_id")
    project_id, path = _project(payload)
    note_id = _int(payload, "object_attributes.id")
    request = QueuedRequest(
        forge="gitlab",
        project=str(project_id),
        number=_int(payload, "merge_request.iid"),
        head_sha=_sha(payload, "merge_request.last_commit.id"),
        base_url=gitlab_base_url(_str(payload, "project.web_url"), path),
        delivery_id=f"{project_id}/note#{note_id}",  # a note is answered once, however sent
        note_id=note_id,
        discussion_id=discussion if isinstance(discussion, str) and _DISCUSSION.fullmatch(
            discussion) else None,
    )
    return Accepted(request, (str(project_id), path))


def parse_gitlab_emoji(payload: object) -> Accepted | Ignored:
    """👍/👎 awarded to a note on a merge request: queued for the note's job, which reads the
    note's awards through the API and acts only when the note is the bot's finding and the
    award a member's (conversation.respond)."""
    if not isinstance(payload, dict) or payload.get("object_kind") != "emoji":
        raise MalformedPayload("an Emoji Hook must have object_kind emoji")
    attrs = _field(payload, "object_attributes")
    if not isinstance(attrs, dict):
        raise MalformedPayload("object_attributes must be an object")
    if payload.get("event_type") != "award" or attrs.get("name") not in VOTES:
        return Ignored("only 👍 and 👎 awarded are taken", "action")
    if attrs.get("awardable_type") != "Note" or not isinstance(payload.get("merge_request"),
                                                               dict):
        return Ignored("only emoji on notes of merge requests are taken", "noteable")
    project_id, path = _project(payload)
    discussion = payload["note"].get("discussion_id") if isinstance(payload.get("note"),
                                                                    dict) else None
    last = payload["merge_request"].get("last_commit")
    head = last.get("id") if isinstance(last, dict) else None
    request = QueuedRequest(
        forge="gitlab",
        project=str(project_id),
        number=_int(payload, "merge_request.iid"),
        head_sha=head if isinstance(head, str) and _SHA.fullmatch(head) else "",
        base_url=gitlab_base_url(_str(payload, "project.web_url"), path),
        delivery_id=f"{project_id}/award#{_int(payload, 'object_attributes.id')}",
        note_id=_int(payload, "object_attributes.awardable_id"),
        discussion_id=discussion if isinstance(discussion, str) and _DISCUSSION.fullmatch(
            discussion) else None,
    )
    return Accepted(request, (str(project_id), path))


def parse_github(event: str | None, payload: object) -> Accepted | Ignored:
    if event in GITHUB_COMMENTS:
        return parse_github_comment(event, payload)
    if event != "pull_request":
        return Ignored(f"event {event!r} is not reviewed", "event")
    if not isinstance(payload, dict):
        raise MalformedPayload("a pull_request event must be a JSON object")
    action = payload.get("action")
    if action not in GITHUB_ACTIONS:
        return Ignored(f"action {action!r} is not reviewed", "action")
    full_name = _str(payload, "repository.full_name")
    number = _int(payload, "pull_request.number")
    head_sha = _sha(payload, "pull_request.head.sha")
    request = QueuedRequest(
        forge="github",
        project=full_name,
        number=number,
        head_sha=head_sha,
        base_url=github_api_base(_str(payload, "repository.url"), full_name),
        delivery_id=event_key(full_name, number, payload.get("before"), head_sha, action),
    )
    return Accepted(request, (full_name,))


def parse_github_comment(event: str, payload: object) -> Accepted | Ignored:
    """A new comment on a pull request (a review comment, or one on its conversation tab),
    queued when it may be for the bot; as on GitLab, whether it is, and from a collaborator
    with write access, the job decides through the API."""
    if not isinstance(payload, dict):
        raise MalformedPayload(f"an {event} event must be a JSON object")
    if payload.get("action") != "created":
        return Ignored("only new comments are answered", "action")
    body = _field(payload, "comment.body")
    if isinstance(body, str) and decode(body) is not None:  # only the bot writes its markers
        return Ignored("the bot's own comment", "own")
    review = event == "pull_request_review_comment"
    if not review:
        issue = _field(payload, "issue")
        if not isinstance(issue, dict) or "pull_request" not in issue:
            return Ignored("only comments on pull requests are answered", "noteable")
        if not (isinstance(body, str) and "@" in body):
            return Ignored("a comment that mentions no one, outside a review thread",
                           "not-addressed")
    full_name = _str(payload, "repository.full_name")
    number = _int(payload, "pull_request.number" if review else "issue.number")
    comment_id = _int(payload, "comment.id")
    request = QueuedRequest(
        forge="github",
        project=full_name,
        number=number,
        head_sha=_sha(payload, "pull_request.head.sha") if review else "",
        base_url=github_api_base(_str(payload, "repository.url"), full_name),
        # answered once, however sent; the two kinds of comment have their own ids
        delivery_id=f"{full_name.lower()}/{'review-' if review else ''}comment#{comment_id}",
        note_id=comment_id,
        discussion_id=None if review else ISSUE,
    )
    return Accepted(request, (full_name,))
