"""A GitHub pull request's comments as `conversation.respond.Threads`: a review comment and the
replies to it (`in_reply_to_id`) are a thread; a comment on the pull request's conversation tab
is a thread of its own. The author's access is the repository permission GitHub reports for
them; replies, 👀 reactions, and resolving a review thread through GraphQL.

`discussion_id` says which kind of comment the note is: `"issue"` for a conversation comment,
anything else (or None) for a review comment.
"""

from __future__ import annotations

from typing import Any

from github import GithubException
from requests import RequestException

from reviewbot.diff import ChangeSet
from reviewbot.discussion import Note, Thread
from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.github.api import forge_error
from reviewbot.forges.github.forge import GitHubForge
from reviewbot.forges.github.graphql import resolve_thread, review_threads
from reviewbot.forges.github.pending import publish_pending
from reviewbot.forges.markers import finding_marker
from reviewbot.forges.summary import paused_summary, published_summary

ISSUE = "issue"  # discussion_id of a conversation comment (reviewbot.webhook.events.ISSUE)
# GitHub's repository permissions on GitLab's access-level scale (command_min_access):
# write is a Developer (30), admin a Maintainer (40); read and triage cannot command the bot
LEVELS = {"admin": 40, "maintain": 40, "write": 30, "triage": 20, "read": 20}
_ERRORS = (GithubException, RequestException)


class GitHubThreads:
    def __init__(self, forge: GitHubForge, discussion_id: str | None = None) -> None:
        self.forge = forge
        self.issue = discussion_id == ISSUE
        self._logins: dict[int, str] = {}  # user id → login: permissions are asked by login

    def me(self) -> tuple[int, str]:
        login = self.forge.me()
        return self.forge.me_id(), login

    def find(self, note_id: int) -> tuple[Note, Thread]:
        pull = self.forge.pull()
        try:
            if self.issue:  # an id of another issue or pull request is not this one's
                comment = pull.get_issue_comment(note_id)
                if not str(comment.issue_url).endswith(f"/issues/{pull.number}"):
                    raise UsageError(f"comment {note_id} is not on pull request #{pull.number}")
                note = self._note(comment)
                return note, Thread(ISSUE, (note,))
            comments = list(pull.get_review_comments())
        except GithubException as exc:
            if exc.status == 404:
                raise UsageError(f"pull request #{pull.number} has no comment {note_id}") from None
            raise forge_error(f"reading comment {note_id}", exc) from None
        except RequestException as exc:
            raise forge_error(f"reading comment {note_id}", exc) from None
        asked = next((c for c in comments if c.id == note_id), None)
        if asked is None:
            raise UsageError(f"pull request #{pull.number} has no review comment {note_id}")
        root_id = asked.in_reply_to_id or asked.id
        root = next((c for c in comments if c.id == root_id), asked)
        replies = sorted((c for c in comments if c.in_reply_to_id == root.id), key=lambda c: c.id)
        return self._note(asked), self._thread(root, replies)

    def _note(self, comment: Any) -> Note:
        """The bot's own comments carry its `me()` id: an installation token knows only its
        login, and the bot is who wrote as that login."""
        user = comment.user
        user_id, login = (int(user.id), str(user.login)) if user is not None else (0, "")
        if self.forge.mine(comment):
            user_id = self.forge.me_id()
        self._logins[user_id] = login
        created, updated = comment.created_at, comment.updated_at
        return Note(int(comment.id), user_id, login, str(comment.body or ""),
                    bot=user is not None and user.type == "Bot",
                    edited=bool(created and updated and created != updated))

    def _thread(self, root: Any, replies: list[Any]) -> Thread:
        marker = finding_marker(root.body) if self.forge.mine(root) else None
        return Thread(str(root.id), (self._note(root), *(self._note(c) for c in replies)),
                      marker.fingerprint if marker else None, str(root.path or ""),
                      root.line or root.original_line, str(root.original_commit_id or ""))

    def access_level(self, user_id: int) -> int:
        """The author's repository permission as an access level; 0 for none or a stranger."""
        login = self._logins.get(user_id)
        if not login:
            return 0
        try:
            permission = self.forge.repo().get_collaborator_permission(login)
        except GithubException as exc:
            if exc.status == 404:
                return 0
            raise forge_error(f"reading {login}'s permission", exc) from None
        except RequestException as exc:
            raise forge_error(f"reading {login}'s permission", exc) from None
        return LEVELS.get(str(permission), 0)

    def head_sha(self) -> str:
        return str(self.forge.pull().head.sha)

    def change_author(self) -> int:
        user = self.forge.pull().user
        return int(user.id) if user is not None else 0

    def changes(self) -> ChangeSet:
        return self.forge.fetch().changes

    def file_at(self, path: str, ref: str) -> str | None:
        return self.forge.file_at(path, ref)

    def reply(self, thread: Thread, body: str) -> None:
        pull = self.forge.pull()
        try:
            if thread.id == ISSUE:
                pull.create_issue_comment(body)
            else:
                pull.create_review_comment_reply(int(thread.id), body)
        except _ERRORS as exc:
            raise forge_error("replying to a comment", exc) from None

    def resolve(self, thread: Thread) -> None:
        """Resolve the review thread whose first comment is the thread's root; a conversation
        comment has nothing to resolve."""
        if thread.id == ISSUE:
            return
        found = review_threads(self.forge.pull(), self.forge.repo().full_name).get(int(thread.id))
        if found is None:
            raise ForgeError(f"GitHub: no review thread starts with comment {thread.id}")
        resolve_thread(self.forge.pull(), found.node)

    def publish(self) -> int:
        """Post the findings that wait for approval; the summary says they were published."""
        count = publish_pending(self.forge.pull(), self.forge.me())
        if count:
            self.forge.write_summary_text(published_summary(self.forge.read_summary()))
        return count

    def set_paused(self, paused: bool) -> None:
        """The pause switch lives in the bot's own summary comment, as on GitLab."""
        self.forge.write_summary_text(paused_summary(self.forge.read_summary(), paused))

    def reactions(self, note: Note) -> list[tuple[int, str, str]]:
        """(user id, login, content: "+1", "-1", …) of each reaction on the comment."""
        pull = self.forge.pull()
        try:
            comment = (pull.get_issue_comment(note.id) if self.issue
                       else pull.get_review_comment(note.id))
            found = list(comment.get_reactions())
        except _ERRORS as exc:
            raise forge_error(f"listing the reactions on comment {note.id}", exc) from None
        out = []
        for reaction in found:
            user = reaction.user
            if user is not None:
                self._logins[int(user.id)] = str(user.login)
                out.append((int(user.id), str(user.login), str(reaction.content)))
        return out

    def acknowledge(self, note: Note) -> None:
        """👀 on the comment: best effort (a reaction that fails changes nothing else)."""
        pull = self.forge.pull()
        try:
            comment = (pull.get_issue_comment(note.id) if self.issue
                       else pull.get_review_comment(note.id))
            comment.create_reaction("eyes")
        except _ERRORS:
            pass
