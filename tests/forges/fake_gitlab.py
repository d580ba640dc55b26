"""A strict fake GitLab: a real HTTP server on 127.0.0.1 that python-gitlab talks to.

It serves one merge request whose diff comes from a real git repository, validates positions
the way GitLab does (400 `line_code can't be blank` for a pair that is not a diff line, stale
SHAs, a wrong old_path on a rename; `position is incomplete`), paginates with X-Next-Page /
X-Total-Pages / Link, injects 429 (Retry-After), 5xx and dropped connections, and records every
request so tests can assert what was posted.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from tests.forges.gitrepo import Repo, diff_lines

BOT_USER = {"id": 1, "username": "reviewbot", "name": "reviewbot", "state": "active"}
MALLORY_USER = {"id": 2, "username": "mallory", "name": "Mallory", "state": "active"}
MALLORY_TOKEN = "glpat-MALLORY-t0ken-5678"
DEV_USER = {"id": 3, "username": "dana", "name": "Dana Dev", "state": "active"}
DEV_TOKEN = "glpat-DANA-t0ken-9012"
OTHER_BOT = {"id": 4, "username": "ci-helper", "name": "CI helper", "state": "active", "bot": True}
OTHER_BOT_TOKEN = "glpat-CIBOT-t0ken-3456"
AUTHOR_USER = {"id": 5, "username": "alex", "name": "Alex Author", "state": "active"}
AUTHOR_TOKEN = "glpat-ALEX-t0ken-7788"  # the merge request's author, a Developer
LINE_CODE_ERROR = 'Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
INCOMPLETE_ERROR = 'Note {:position=>["is incomplete"]}'


@dataclass
class Fault:
    method: str
    pattern: str
    status: int | None  # None: do the work, then drop the connection without answering
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    skip: int = 0  # let this many matching requests through first


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int | None


class State:
    def __init__(self, repo: Repo, *, project_id: int, project_path: str, iid: int, token: str,
                 base: str, head: str, target: str) -> None:
        self.repo, self.project_id, self.project_path = repo, project_id, project_path
        self.iid, self.token = iid, token
        self.base, self.head, self.start = base, head, target
        self.lock = threading.RLock()
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.discussions: list[dict[str, Any]] = []
        self.drafts: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.too_large: set[str] = set()  # empty diff in /diffs; full diff with access_raw_diffs
        self.collapsed: set[str] = set()
        self.never: set[str] = set()  # too large everywhere, even with access_raw_diffs
        self.hidden: set[str] = set()  # left out of /diffs (overflow); /changes raw has them
        self.next_id = 1000
        self.description = "Makes the parser robust against empty input."
        self.url = ""  # set when the server starts
        self.hook: Any = None  # called with each handled request, before the answer is sent
        # accounts by token: the bot, and another user who can comment (authorship matters)
        self.users: dict[str, dict[str, Any]] = {
            token: BOT_USER, MALLORY_TOKEN: MALLORY_USER, DEV_TOKEN: DEV_USER,
            OTHER_BOT_TOKEN: OTHER_BOT, AUTHOR_TOKEN: AUTHOR_USER}
        # project members by user id, with GitLab's access levels (mallory is not one)
        self.members: dict[int, int] = {BOT_USER["id"]: 40, DEV_USER["id"]: 30,
                                        OTHER_BOT["id"]: 30, AUTHOR_USER["id"]: 30}
        self.awards: list[tuple[int, str, int]] = []  # (note id, emoji, user id)
        self.hooks: list[dict[str, Any]] = []  # the project's webhooks (GET …/hooks)
        self.title = "Test MR"
        # issues by full reference (`grp/proj#12`): GitLab links those the description
        # closes (`Closes #12`, `Fixes other/app#3`) or mentions to the MR, across projects
        self.issues: dict[str, dict[str, Any]] = {}
        self.archive: bytes | None = None  # served instead of `git archive` (hostile archives)
        self.actor: dict[str, Any] = BOT_USER  # who sent the request being handled
        self._diff_cache: dict[tuple[str, str], list[dict[str, Any]]] = {}

    # the merge request
    def push(self, head: str) -> None:
        with self.lock:
            self.head = head

    def diffs(self, a: str | None = None, b: str | None = None) -> list[dict[str, Any]]:
        key = (a or self.base, b or self.head)
        if key not in self._diff_cache:
            self._diff_cache[key] = self.repo.file_diffs(*key)  # type: ignore[assignment]
        return [dict(d) for d in self._diff_cache[key]]

    def mr_json(self) -> dict[str, Any]:
        count = len(self.diffs())
        return {
            "id": 1, "iid": self.iid, "project_id": self.project_id, "title": self.title,
            "author": AUTHOR_USER,
            "description": self.description,
            "state": "opened", "sha": self.head, "source_branch": "feature",
            "target_branch": "main", "changes_count": f"{count - len(self.hidden)}+"
            if self.hidden else str(count),
            "diff_refs": {"base_sha": self.base, "start_sha": self.start, "head_sha": self.head},
            "web_url": f"http://gitlab.example/{self.project_path}/-/merge_requests/{self.iid}",
            "references": {"short": f"!{self.iid}", "full": f"{self.project_path}!{self.iid}"},
        }

    def add_issue(self, iid: int, title: str, description: str, project: str = "",
                  project_id: int = 0, confidential: bool = False) -> None:
        """An issue of this project, or of `project` (another one, id `project_id`)."""
        path = project or self.project_path
        self.issues[f"{path}#{iid}"] = {
            "id": 5000 + len(self.issues), "iid": iid,
            "project_id": project_id if project else self.project_id, "title": title,
            "description": description, "state": "opened", "confidential": confidential,
            "web_url": f"http://gitlab.example/{path}/-/issues/{iid}",
            "references": {"short": f"#{iid}", "full": f"{path}#{iid}"}}

    def linked(self, closing: bool) -> list[dict[str, Any]]:
        """The issues the description closes (GitLab's default closing pattern), or those it
        or anyone's comment on the merge request only mentions (as GitLab relates them); a
        confidential issue is listed as GitLab lists it to a member who may see it."""
        found: list[dict[str, Any]] = []
        texts = [self.description or ""] + ([n.get("body") or "" for n in self.notes()]
                                            if not closing else [])
        for m in (m for text in texts for m in re.finditer(_REFERENCE, text)):
            issue = self.issues.get(f"{m['path'] or self.project_path}#{m['iid']}")
            if issue is not None and bool(m["keyword"]) == closing and issue not in found:
                found.append(dict(issue))
        return found

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    # what tests look at
    def notes(self) -> list[dict[str, Any]]:
        return [n for d in self.discussions for n in d["notes"]]

    def diff_notes(self) -> list[dict[str, Any]]:
        return [n for n in self.notes() if n.get("position")]

    def statuses(self) -> list[int | None]:
        return [r.status for r in self.requests]

    def resolve_by_human(self, predicate: Any, by: dict[str, Any] = DEV_USER) -> int:
        count = 0
        for d in self.discussions:
            if d["notes"][0].get("position") and predicate(d["notes"][0]):
                for n in d["notes"]:
                    n["resolved"], n["resolved_by"] = True, dict(by)
                count += 1
        return count

    # validation, as GitLab does it
    def validate(self, pos: dict[str, Any] | None, body: str) -> str | None:
        if pos is None:
            return None
        if not all(pos.get(k) for k in ("base_sha", "start_sha", "head_sha", "old_path",
                                        "new_path", "position_type")):
            return INCOMPLETE_ERROR
        if (pos["base_sha"], pos["start_sha"], pos["head_sha"]) != (self.base, self.start,
                                                                    self.head):
            return LINE_CODE_ERROR  # stale SHAs: no such diff
        file = next((d for d in self.diffs() if d["new_path"] == pos["new_path"]), None)
        if file is None or file["old_path"] != pos["old_path"]:
            return LINE_CODE_ERROR
        lines = diff_lines(str(file["diff"]))
        new_line, old_line = _int(pos.get("new_line")), _int(pos.get("old_line"))
        hit = [ln for ln in lines if (ln.new, ln.old) == (new_line, old_line)]
        if not hit:
            return LINE_CODE_ERROR
        if pos.get("line_range") and not self._range_ok(pos, file, lines, hit[0]):
            return LINE_CODE_ERROR
        if re.search(r"`{3,}suggestion", body) and hit[0].new is None:
            self.violations.append(f"suggestion on a removed line: {pos}")
        return None

    def _range_ok(self, pos: dict[str, Any], file: dict[str, Any], lines: list[Any],
                  anchor: Any) -> bool:
        sha = hashlib.sha1(str(file["new_path"]).encode()).hexdigest()
        index = {f"{sha}_{ln.code_old}_{ln.code_new}": (i, ln) for i, ln in enumerate(lines)}
        ends = []
        for key in ("start", "end"):
            point = pos["line_range"].get(key) or {}
            found = index.get(point.get("line_code", ""))
            if found is None or point.get("type") != ("new" if found[1].kind == "+" else "old"):
                return False
            ends.append(found[0])
        return ends[0] <= lines.index(anchor) <= ends[1]


_REFERENCE = re.compile(
    r"(?P<keyword>\b(?:[Cc]los(?:e[sd]?|ing)|[Ff]ix(?:e[sd]|ing)?|[Rr]esolv(?:e[sd]?|ing))"
    r":? +)?(?P<path>[\w.-]+/[\w./-]+)?#(?P<iid>\d+)")


def _int(value: Any) -> int | None:
    return None if value in (None, "") else int(value)


class FakeGitLab:
    """Context manager: `with FakeGitLab(repo, base=..., head=...) as gl: gl.url`."""

    def __init__(self, repo: Repo, *, base: str, head: str, target: str | None = None,
                 project_id: int = 42, project_path: str = "grp/proj", iid: int = 7,
                 token: str = "glpat-SECRET-t0ken-1234", max_per_page: int = 100) -> None:
        self.state = State(repo, project_id=project_id, project_path=project_path, iid=iid,
                           token=token, base=base, head=head, target=target or base)
        self.max_per_page = max_per_page
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> State:
        self.thread.start()
        self.state.url = self.url
        return self.state

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _handler(fake: FakeGitLab) -> type[BaseHTTPRequestHandler]:
    from tests.forges.fake_gitlab_routes import route

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall per request

        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _serve(self, method: str) -> None:
            state = fake.state
            split = urlsplit(self.path)
            path = unquote(split.path.removeprefix("/api/v4"))
            query = parse_qs(split.query)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = _decode_body(raw, self.headers.get("Content-Type", ""))
            with state.lock:
                record = Recorded(method, path, query, body, None)
                state.requests.append(record)
                actor = state.users.get(self.headers.get("PRIVATE-TOKEN") or "")
                if actor is None:
                    record.status = 401
                    return self._send(401, {"message": "401 Unauthorized"})
                state.actor = actor
                fault = _take_fault(state, method, path)
                if fault is not None and fault.status is not None:
                    record.status = fault.status
                    return self._send(fault.status, {"message": f"{fault.status} injected"},
                                      fault.headers)
                status, payload, headers = route(state, method, path, query, body,
                                                 fake.max_per_page, fake.url)
                record.status = status if fault is None else None
                if state.hook is not None:
                    state.hook(record)
            if fault is not None:  # the work is done, the answer is lost
                self.close_connection = True
                self.connection.close()
                return
            self._send(status, payload, headers)

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            ctype = "text/plain" if isinstance(payload, bytes) else "application/json"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_DELETE(self) -> None:
            self._serve("DELETE")

    return Handler


def _decode_body(raw: bytes, ctype: str) -> Any:
    if not raw:
        return {}
    if "json" in ctype:
        return json.loads(raw)
    return {k: v[0] for k, v in parse_qs(raw.decode()).items()}


def _take_fault(state: State, method: str, path: str) -> Fault | None:
    for fault in state.faults:
        if fault.times > 0 and fault.method == method and re.search(fault.pattern, path):
            if fault.skip > 0:
                fault.skip -= 1
                return None
            fault.times -= 1
            return fault
    return None


def paginate(items: list[Any], query: dict[str, list[str]], max_per_page: int, url: str,
             path: str) -> tuple[list[Any], dict[str, str]]:
    per_page = min(int(query.get("per_page", ["20"])[0]), max_per_page)
    page = int(query.get("page", ["1"])[0])
    pages = max(1, -(-len(items) // per_page))
    headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
               "X-Total-Pages": str(pages), "X-Next-Page": str(page + 1) if page < pages else "",
               "X-Prev-Page": str(page - 1) if page > 1 else ""}
    if page < pages:
        rest = {k: v[0] for k, v in query.items() if k not in ("page", "per_page")}
        link = f"{url}/api/v4{path}?{urlencode({**rest, 'page': page + 1, 'per_page': per_page})}"
        headers["Link"] = f'<{link}>; rel="next"'
    return items[(page - 1) * per_page: page * per_page], headers


def stamp(state: State) -> str:
    """A time as GitLab writes it, later at each call (an edit's `updated_at` differs)."""
    return f"2026-12-01T10:{state.new_id() // 60 % 60:02d}:{state.new_id() % 60:02d}.000Z"


def new_discussion(state: State, body: str, position: dict[str, Any] | None,
                   *, individual: bool = False) -> dict[str, Any]:
    now = stamp(state)
    note = {"id": state.new_id(), "body": body, "author": dict(state.actor),
            "created_at": now, "updated_at": now,
            "system": False, "type": "DiffNote" if position else None, "position": position,
            "resolvable": bool(position), "resolved": False}
    disc = {"id": uuid.uuid4().hex, "individual_note": individual, "notes": [note]}
    state.discussions.append(disc)
    return disc
