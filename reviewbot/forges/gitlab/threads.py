"""A GitLab merge request's discussions as `conversation.respond.Threads`: the note and its
discussion, the author's access level from the members API, replies, resolving, 👀."""

from __future__ import annotations

from typing import Any

from gitlab.exceptions import GitlabError

from reviewbot.diff import ChangeSet
from reviewbot.discussion import Note, Thread
from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.gitlab.api import call
from reviewbot.forges.gitlab.forge import GitLabForge
from reviewbot.forges.gitlab.post import publish_drafts
from reviewbot.forges.markers import finding_marker
from reviewbot.forges.summary import paused_summary, published_summary

VOTES = {"thumbsup": "+1", "thumbsdown": "-1"}  # GitLab's names for GitHub's reactions


class GitLabThreads:
    def __init__(self, forge: GitLabForge, discussion_id: str | None = None) -> None:
        self.forge = forge
        self.discussion_id = discussion_id  # the note's, when the event named it
        self._login: str | None = None

    def me(self) -> tuple[int, str]:
        me = self.forge.me()
        if self._login is None:
            user = self.forge.gl.user
            self._login = str(user.attributes.get("username") or "") if user else ""
        return me, self._login

    def find(self, note_id: int) -> tuple[Note, Thread]:
        """The note and its thread: one request when the discussion is known (a webhook's
        event names it), else every discussion of the merge request (`reviewbot reply`)."""
        for d in self._discussions():
            notes = d.attributes.get("notes", [])
            for raw in notes:
                if raw.get("id") == note_id:
                    return self._note(raw), self._thread(str(d.id), notes)
        raise UsageError(f"merge request !{self.forge.iid} has no note {note_id}")

    def _discussions(self) -> list[Any]:
        if self.discussion_id is not None:
            try:
                return [self.forge.mr.discussions.get(self.discussion_id)]
            except GitlabError as exc:
                if exc.response_code != 404:  # a wrong id falls back to the whole list
                    raise ForgeError(f"GitLab: reading a discussion failed: "
                                     f"{exc.response_code}", status=exc.response_code) from None
        return list(call(lambda: self.forge.mr.discussions.list(get_all=True, per_page=100),
                         "listing discussions"))

    def _note(self, raw: dict[str, Any]) -> Note:
        author = raw.get("author")
        author = author if isinstance(author, dict) else {}
        created, updated = raw.get("created_at"), raw.get("updated_at")
        return Note(int(raw["id"]), int(author.get("id") or 0), str(author.get("username") or ""),
                    str(raw.get("body") or ""), bool(raw.get("system")),
                    bool(author.get("bot")), edited=bool(created and updated and created != updated))

    def _thread(self, thread_id: str, notes: list[dict[str, Any]]) -> Thread:
        typed = tuple(self._note(n) for n in notes)
        first = notes[0] if notes else {}
        marker = finding_marker(first.get("body")) if first and self.forge.mine(first) else None
        pos = first.get("position") or {}
        return Thread(thread_id, typed, marker.fingerprint if marker else None,
                      str(pos.get("new_path") or pos.get("old_path") or ""),
                      pos.get("new_line") or pos.get("old_line"), str(pos.get("head_sha") or ""),
                      bool(first.get("resolved")))

    def access_level(self, user_id: int) -> int:
        """The member's access level, inherited ones included; 0 for a non-member."""
        try:
            member = self.forge.project.members_all.get(user_id)
        except GitlabError as exc:
            if exc.response_code == 404:
                return 0
            raise ForgeError(f"GitLab: reading member {user_id} failed: {exc.response_code}",
                             status=exc.response_code) from None
        level = member.attributes.get("access_level")
        return level if isinstance(level, int) else 0

    def _meta(self) -> dict[str, Any]:
        return dict(self.forge.merge_request().attributes)

    def head_sha(self) -> str:
        return str((self._meta().get("diff_refs") or {}).get("head_sha") or "")

    def change_author(self) -> int:
        author = self._meta().get("author")
        return int(author.get("id") or 0) if isinstance(author, dict) else 0

    def changes(self) -> ChangeSet:
        return self.forge.fetch().changes

    def file_at(self, path: str, ref: str) -> str | None:
        return self.forge.file_at(path, ref)

    def reply(self, thread: Thread, body: str) -> None:
        discussion = self.forge.mr.discussions.get(thread.id, lazy=True)
        call(lambda: discussion.notes.create({"body": body}), "replying in a discussion")

    def resolve(self, thread: Thread) -> None:
        discussion = self.forge.mr.discussions.get(thread.id, lazy=True)
        discussion.resolved = True
        call(discussion.save, "resolving a discussion")

    def publish(self) -> int:
        """Post the findings that wait for approval; the summary says they were published."""
        count = publish_drafts(self.forge.mr)
        if count:
            self.forge.write_summary_text(published_summary(self.forge.read_summary()))
        return count

    def set_paused(self, paused: bool) -> None:
        """The pause switch lives in the bot's own summary note, like the rest of its state."""
        self.forge.write_summary_text(paused_summary(self.forge.read_summary(), paused))

    def reactions(self, note: Note) -> list[tuple[int, str, str]]:
        """(user id, login, "+1" | "-1" | the emoji's name) of each award on the note."""
        awards = call(lambda: self.forge.mr.notes.get(note.id, lazy=True).awardemojis.list(
            get_all=True), "listing a note's emoji")
        out = []
        for award in awards:
            user = award.attributes.get("user")
            user = user if isinstance(user, dict) else {}
            name = str(award.attributes.get("name") or "")
            out.append((int(user.get("id") or 0), str(user.get("username") or ""),
                        VOTES.get(name, name)))
        return out

    def acknowledge(self, note: Note) -> None:
        """👀 on the note: best effort (an award that fails changes nothing else)."""
        try:
            self.forge.mr.notes.get(note.id, lazy=True).awardemojis.create({"name": "eyes"})
        except GitlabError:
            pass
