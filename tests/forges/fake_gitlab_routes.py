"""The endpoints of the fake GitLab (see fake_gitlab.py). Each returns (status, payload, headers)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from tests.forges.fake_gitlab import State, new_discussion, paginate, stamp

Result = tuple[int, Any, dict[str, str]]
_MR = r"^/projects/(?P<pid>.+?)/merge_requests/(?P<iid>\d+)"


def route(state: State, method: str, path: str, query: dict[str, list[str]], body: Any,
          max_per_page: int, url: str) -> Result:
    for verb, pattern, fn in _ROUTES:
        m = re.match(pattern + "$", path)
        if verb == method and m:
            if "pid" in m.groupdict() and m["pid"] not in (str(state.project_id),
                                                          state.project_path):
                return 404, {"message": "404 Project Not Found"}, {}
            if "iid" in m.groupdict() and int(m["iid"]) != state.iid:
                return 404, {"message": "404 Not found"}, {}
            status, payload, headers = fn(state, m, query, body)
            if isinstance(payload, list) and method == "GET":
                payload, headers = paginate(payload, query, max_per_page, url, path)
            return status, payload, headers
    return 404, {"message": f"404 {method} {path} not handled by the fake"}, {}


def _mr(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, state.mr_json(), {}


def _diffs(state: State, m: Any, q: Any, b: Any) -> Result:
    out = []
    for d in state.diffs():
        if d["new_path"] in state.hidden:
            continue
        if d["new_path"] in state.too_large | state.never:
            d.update(too_large=True, diff="")
        elif d["new_path"] in state.collapsed:
            d.update(collapsed=True, diff="")
        out.append(d)
    return 200, out, {}


def _changes(state: State, m: Any, q: Any, b: Any) -> Result:
    raw = q.get("access_raw_diffs", ["false"])[0] in ("1", "t", "true", "True", "TRUE", "yes")
    changes = []
    for d in state.diffs():
        if d["new_path"] in state.never or (not raw and d["new_path"] in state.too_large):
            d.update(too_large=True, diff="")
        if not raw and d["new_path"] in state.hidden:
            continue
        changes.append(d)
    return 200, {**state.mr_json(), "changes": changes, "overflow": False}, {}


def _raw_diffs(state: State, m: Any, q: Any, b: Any) -> Result:
    too_big = tuple(sorted(state.never))  # too large for GitLab everywhere
    return 200, state.repo.raw_diff(state.base, state.head, too_big).encode(), {}


def _commits(state: State, m: Any, q: Any, b: Any) -> Result:
    """Newest first, like GitLab; `title` is the message's first line."""
    out = []
    for c in state.repo.rev_list(state.base, state.head):
        message = state.repo.git("log", "-1", "--format=%B", c).strip()
        out.append({"id": c, "short_id": c[:8], "title": message.split("\n", 1)[0],
                    "message": message})
    return 200, out, {}


def _compare(state: State, m: Any, q: Any, b: Any) -> Result:
    a, z = q["from"][0], q["to"][0]
    return 200, {"commit": {"id": z}, "commits": [{"id": c} for c in state.repo.rev_list(a, z)],
                 "diffs": state.diffs(a, z), "compare_timeout": False,
                 "compare_same_ref": a == z}, {}


def _list_discussions(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, list(state.discussions), {}


def _create_discussion(state: State, m: Any, q: Any, b: Any) -> Result:
    error = state.validate(b.get("position"), b.get("body", ""))
    if error:
        return 400, {"message": f"400 Bad request - {error}"}, {}
    return 201, new_discussion(state, b["body"], b.get("position")), {}


def _find(state: State, did: str) -> dict[str, Any] | None:
    return next((d for d in state.discussions if d["id"] == did), None)


def _get_discussion(state: State, m: Any, q: Any, b: Any) -> Result:
    d = _find(state, m["did"])
    return (200, d, {}) if d else (404, {"message": "404 Not found"}, {})


def _put_discussion(state: State, m: Any, q: Any, b: Any) -> Result:
    d = _find(state, m["did"])
    if d is None:
        return 404, {"message": "404 Not found"}, {}
    resolved = b.get("resolved", q.get("resolved", [None])[0])
    if resolved is None:
        return 400, {"message": "400 (Bad request) \"resolved\" not given"}, {}
    for n in d["notes"]:
        n["resolved"] = resolved in (True, "true")
        n["resolved_by"] = dict(state.actor) if n["resolved"] else None
    return 200, d, {}


def _list_notes(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, [n for d in state.discussions for n in d["notes"]], {}


def _create_note(state: State, m: Any, q: Any, b: Any) -> Result:
    return 201, new_discussion(state, b["body"], None, individual=True)["notes"][0], {}


def _user(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, dict(state.actor), {}


def _put_note(state: State, m: Any, q: Any, b: Any) -> Result:
    for n in state.notes():
        if n["id"] == int(m["nid"]):
            # GitLab: the author edits a note, and a Maintainer anyone's
            if n["author"]["id"] != state.actor["id"] \
                    and state.members.get(state.actor["id"], 0) < 40:
                return 403, {"message": "403 Forbidden"}, {}
            n["body"], n["updated_at"] = b["body"], stamp(state)
            return 200, n, {}
    return 404, {"message": "404 Not found"}, {}


def _member(state: State, m: Any, q: Any, b: Any) -> Result:
    uid = int(m["uid"])
    level = state.members.get(uid)
    if level is None:
        return 404, {"message": "404 Not found"}, {}
    user = next(u for u in state.users.values() if u["id"] == uid)
    return 200, {**user, "access_level": level}, {}


def _discussion_note(state: State, m: Any, q: Any, b: Any) -> Result:
    d = _find(state, m["did"])
    if d is None:
        return 404, {"message": "404 Not found"}, {}
    if not isinstance(b, dict) or not b.get("body"):
        return 400, {"message": "400 (Bad request) \"body\" not given"}, {}
    first = d["notes"][0]
    now = stamp(state)
    note = {"id": state.new_id(), "body": b["body"], "author": dict(state.actor),
            "created_at": now, "updated_at": now,
            "system": False, "type": first.get("type"), "position": first.get("position"),
            "resolvable": first.get("resolvable", False), "resolved": first.get("resolved", False)}
    d["notes"].append(note)
    return 201, note, {}


def _award(state: State, m: Any, q: Any, b: Any) -> Result:
    nid = int(m["nid"])
    if not any(n["id"] == nid for n in state.notes()):
        return 404, {"message": "404 Not found"}, {}
    state.awards.append((nid, str(b.get("name")), state.actor["id"]))
    return 201, {"id": state.new_id(), "name": b.get("name"), "user": dict(state.actor)}, {}


def _awards(state: State, m: Any, q: Any, b: Any) -> Result:
    nid = int(m["nid"])
    if not any(n["id"] == nid for n in state.notes()):
        return 404, {"message": "404 Not found"}, {}
    people = {u["id"]: u for u in state.users.values()}
    return 200, [{"id": i, "name": name, "user": dict(people[uid]), "awardable_id": nid,
                  "awardable_type": "Note"}
                 for i, (n, name, uid) in enumerate(state.awards, 1) if n == nid], {}


def _list_drafts(state: State, m: Any, q: Any, b: Any) -> Result:
    """A user's drafts are theirs alone: listed, deleted and published only by them."""
    return 200, [d for d in state.drafts if d["author_id"] == state.actor["id"]], {}


def _create_draft(state: State, m: Any, q: Any, b: Any) -> Result:
    error = state.validate(b.get("position"), b.get("note", ""))
    if error:
        return 400, {"message": f"400 Bad request - {error}"}, {}
    draft = {"id": state.new_id(), "note": b["note"], "position": b.get("position"),
             "author_id": state.actor["id"], "discussion_id": None, "commit_id": None}
    state.drafts.append(draft)
    return 201, draft, {}


def _delete_draft(state: State, m: Any, q: Any, b: Any) -> Result:
    before = len(state.drafts)
    state.drafts = [d for d in state.drafts
                    if d["id"] != int(m["did"]) or d["author_id"] != state.actor["id"]]
    return (204, b"", {}) if len(state.drafts) < before else (404, {"message": "404"}, {})


def _bulk_publish(state: State, m: Any, q: Any, b: Any) -> Result:
    mine = [d for d in state.drafts if d["author_id"] == state.actor["id"]]
    for draft in mine:
        new_discussion(state, draft["note"], draft["position"])
    state.drafts = [d for d in state.drafts if d not in mine]
    return 204, b"", {}


def _file_raw(state: State, m: Any, q: Any, b: Any) -> Result:
    ref = q["ref"][0]
    ref = state.start if ref == "main" else ref  # the target branch: main, at `start`
    try:
        return 200, state.repo.git("show", f"{ref}:{m['fp']}").encode(), {}
    except subprocess.CalledProcessError:  # no such path at that ref
        return 404, {"message": "404 File Not Found"}, {}


def _archive(state: State, m: Any, q: Any, b: Any) -> Result:
    """GitLab's archive: one top directory `<project>-<sha>-<sha>/`; 404 for an unknown SHA."""
    sha = q.get("sha", [state.head])[0]
    try:
        full = state.repo.git("rev-parse", "--verify", "--end-of-options", f"{sha}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        return 404, {"message": "404 Commit Not Found"}, {}
    if state.archive is not None:
        return 200, state.archive, {}
    name = state.project_path.rsplit("/", 1)[-1]
    return 200, state.repo.archive(full, f"{name}-{full}-{full}/"), {}


def _project(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, {"id": state.project_id, "path_with_namespace": state.project_path,
                 "default_branch": "main", "web_url": f"http://gitlab.example/{state.project_path}"}, {}


def _hooks(state: State, m: Any, q: Any, b: Any) -> Result:
    """GitLab lists a project's hooks to Maintainers and Owners only."""
    if state.members.get(state.actor["id"], 0) < 40:
        return 403, {"message": "403 Forbidden"}, {}
    return 200, [dict(h) for h in state.hooks], {}


def _closes_issues(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, state.linked(closing=True), {}


def _related_issues(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, state.linked(closing=False), {}


_ROUTES = [
    ("GET", r"^/projects/(?P<pid>.+?)/hooks", _hooks),
    ("GET", r"^/projects/(?P<pid>.+?)/repository/archive\.tar\.gz", _archive),
    ("GET", r"^/user", _user),
    ("GET", r"^/projects/(?P<pid>.+?)/members/all/(?P<uid>\d+)", _member),
    ("POST", _MR + r"/discussions/(?P<did>\w+)/notes", _discussion_note),
    ("POST", _MR + r"/notes/(?P<nid>\d+)/award_emoji", _award),
    ("GET", _MR + r"/notes/(?P<nid>\d+)/award_emoji", _awards),
    ("GET", r"^/projects/(?P<pid>.+?)/repository/files/(?P<fp>.+)/raw", _file_raw),
    ("GET", _MR, _mr),
    ("GET", _MR + "/diffs", _diffs),
    ("GET", _MR + "/changes", _changes),
    ("GET", _MR + "/raw_diffs", _raw_diffs),
    ("GET", _MR + "/commits", _commits),
    ("GET", _MR + "/closes_issues", _closes_issues),
    ("GET", _MR + "/related_issues", _related_issues),
    ("GET", r"^/projects/(?P<pid>.+?)/repository/compare", _compare),
    ("GET", _MR + "/discussions", _list_discussions),
    ("POST", _MR + "/discussions", _create_discussion),
    ("GET", _MR + r"/discussions/(?P<did>\w+)", _get_discussion),
    ("PUT", _MR + r"/discussions/(?P<did>\w+)", _put_discussion),
    ("GET", _MR + "/notes", _list_notes),
    ("POST", _MR + "/notes", _create_note),
    ("PUT", _MR + r"/notes/(?P<nid>\d+)", _put_note),
    ("GET", _MR + "/draft_notes", _list_drafts),
    ("POST", _MR + "/draft_notes/bulk_publish", _bulk_publish),
    ("POST", _MR + "/draft_notes", _create_draft),
    ("DELETE", _MR + r"/draft_notes/(?P<did>\d+)", _delete_draft),
    # last: "42/hooks" would also read as a project's path
    ("GET", r"^/projects/(?P<pid>[^/]+|[^/]+/[^/]+)", _project),
]
