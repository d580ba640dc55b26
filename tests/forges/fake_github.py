"""A strict fake of the GitHub REST API that PyGithub talks to for real over HTTP.

Serves one repository backed by a real git repo (`GitRepo`). It validates reviews like GitHub:
any comment off the diff rejects the whole review with 422 and says nothing about which one;
`start_line` must be in the same hunk; the commit must be the PR head (stricter than GitHub,
which also accepts older PR commits). The `.diff` media type answers 406 `too_large` above a
configurable size; lists paginate with Link headers; failures (429/403 with Retry-After, 500)
are injected with `fail_next`. Everything is recorded in `requests`, `reviews`,
`review_comments` and `issue_comments`.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.forges.github_repo import GitRepo, PatchFile, split_files

BOT = {"login": "reviewbot[bot]", "id": 41898282, "type": "Bot"}
MALLORY = {"login": "mallory", "id": 666, "type": "User"}
MALLORY_TOKEN = "ghp_mallory_token_987654321"
MARIA = {"login": "maria", "id": 700, "type": "User"}  # a collaborator with write access
MARIA_TOKEN = "ghp_maria_token_1234567890"
TS = "2026-01-01T00:00:00Z"


_CLOSING = re.compile(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):? +"
                      r"(?P<repo>[\w.-]+/[\w.-]+)?#(?P<number>\d+)")


@dataclass
class Failure:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    times: int
    after: bool = False  # apply the request, then answer with the failure (a lost response)
    skip: int = 0  # let this many matching requests through first
    message: str = ""


@dataclass
class Recorded:
    method: str
    path: str
    status: int
    authorization: str
    body: Any = None


@dataclass
class PullState:
    number: int
    title: str
    base: str
    head: str
    body: str | None = "Makes the parser robust against empty input."
    author: dict[str, Any] = field(default_factory=lambda: dict(BOT))


@dataclass
class FakeGitHub:
    repo: GitRepo
    full_name: str = "acme/widgets"
    token: str = "ghp_fake_token_0123456789"
    max_diff_files: int = 300
    max_diff_lines: int = 20000
    pulls: dict[int, PullState] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    issue_comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    # another account that can comment (authorship matters: only the bot's comments count)
    others: dict[str, dict[str, Any]] = field(default_factory=lambda: {MALLORY_TOKEN: MALLORY,
                                                                        MARIA_TOKEN: MARIA})
    # repository permissions by login (GET …/collaborators/{login}/permission); any other
    # account reads as "read", as a stranger does on a public repository
    permissions: dict[str, str] = field(default_factory=lambda: {"maria": "write",
                                                                 "reviewbot[bot]": "write"})
    reactions: list[dict[str, Any]] = field(default_factory=list)  # {on, id, content, user}
    hooks: list[dict[str, Any]] = field(default_factory=list)  # the repository's webhooks
    resolved: dict[int, str] = field(default_factory=dict)  # resolved threads' roots: by whom
    # GET /user with the bot's token: its account, or 403 as for an Actions installation token
    user_forbidden: bool = False
    pull_url_base: str = ""  # answer PR URLs under another prefix (a misconfigured proxy)
    # the tarball endpoint's answer: a codeload link on this host (or `archive_link`, to test
    # a link that leaves the forge), serving `git archive` (or the hostile `archive`)
    archive_link: str | None = None
    archive: bytes | None = None
    # issues by `owner/name#N`: a pull request closes those its body names after a closing
    # keyword (`Fixes #12`, `closes other/repo#3`), in this repository or another
    issues: dict[str, dict[str, Any]] = field(default_factory=dict)

    def submitted(self) -> list[dict[str, Any]]:
        """The review comments anyone sees: those of pending reviews are not listed."""
        pending = {r["id"] for r in self.reviews if r["state"] == "PENDING"}
        return [c for c in self.review_comments if c["pull_request_review_id"] not in pending]
    codeload_token: str = "codeload-short-lived-0123"
    codeload_auth: list[str] = field(default_factory=list)  # Authorization headers it was sent
    _ids: int = 1000

    def closing(self, number: int) -> list[dict[str, Any]]:
        """GitHub's closingIssuesReferences of a pull request, from its body."""
        found: list[dict[str, Any]] = []
        for m in re.finditer(_CLOSING, self.pulls[number].body or ""):
            key = f"{m['repo'] or self.full_name}#{m['number']}"
            if key in self.issues and self.issues[key] not in found:
                found.append(self.issues[key])
        return found

    # --- test controls -------------------------------------------------------------------
    def add_issue(self, number: int, title: str, body: str, repo: str = "") -> None:
        repo = repo or self.full_name
        self.issues[f"{repo}#{number}"] = {"number": number, "title": title, "body": body,
                                            "repository": {"nameWithOwner": repo}}

    def open_pull(self, base: str, head: str, number: int = 7, title: str = "Change") -> int:
        self.pulls[number] = PullState(number, title, base, head)
        return number

    def push(self, number: int, head: str) -> None:
        self.pulls[number].head = head

    def fail_next(self, method: str, path: str, status: int, times: int = 1,
                  headers: dict[str, str] | None = None, after: bool = False,
                  skip: int = 0, message: str = "") -> None:
        self.failures.append(Failure(method, re.compile(path), status, headers or {}, times,
                                     after, skip, message))

    def statuses(self, status: int) -> list[Recorded]:
        return [r for r in self.requests if r.status == status]

    # --- helpers -------------------------------------------------------------------------
    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def repo_url(self) -> str:
        return f"{self.base_url}/repos/{self.full_name}"

    def files(self, number: int) -> list[PatchFile]:
        pr = self.pulls[number]
        return split_files(self.repo.diff(pr.base, pr.head))


def page(request: Request, items: list[Any]) -> Response:
    per_page = min(int(request.query_params.get("per_page", "30")), 100)
    number = max(int(request.query_params.get("page", "1")), 1)
    chunk = items[(number - 1) * per_page: number * per_page]
    last = max((len(items) + per_page - 1) // per_page, 1)
    links = []
    base = str(request.url.remove_query_params(["page", "per_page"]))
    sep = "&" if "?" in base else "?"
    if number < last:
        links.append(f'<{base}{sep}page={number + 1}&per_page={per_page}>; rel="next"')
        links.append(f'<{base}{sep}page={last}&per_page={per_page}>; rel="last"')
    headers = {"Link": ", ".join(links)} if links else {}
    return JSONResponse(chunk, headers=headers)


def failure(rec: Recorded, hit: Failure) -> Response:
    rec.status = hit.status
    limited = hit.status in (403, 429)
    message = hit.message or (
        "You have exceeded a secondary rate limit." if limited else "Server Error")
    return JSONResponse({"message": message}, status_code=hit.status, headers=hit.headers)


def unprocessable(*errors: str) -> JSONResponse:
    return JSONResponse({"message": "Unprocessable Entity", "errors": list(errors),
                         "documentation_url": "https://docs.github.com/rest"}, status_code=422)


def build_app(fake: FakeGitHub) -> Starlette:
    from tests.forges.fake_github_routes import routes  # here: the routes import this module

    async def guard(request: Request, call_next):  # type: ignore[no-untyped-def]
        body = await request.body()
        auth = request.headers.get("authorization", "")
        if request.url.path.startswith("/_codeload/"):  # codeload: the link's own token
            fake.codeload_auth.append(auth)
            if request.query_params.get("token") != fake.codeload_token:
                return JSONResponse({"message": "Not Found"}, status_code=404)
            return await call_next(request)
        rec = Recorded(request.method, request.url.path, 0, auth,
                       json.loads(body) if body.startswith((b"{", b"[")) else None)
        with fake.lock:
            fake.requests.append(rec)
            hit = next((f for f in fake.failures if f.times > 0 and f.method == request.method
                        and f.path.search(request.url.path)), None)
            if hit is not None and hit.skip > 0:
                hit.skip, hit = hit.skip - 1, None
            elif hit is not None:
                hit.times -= 1
        token = auth.split(" ", 1)[-1]
        user = BOT if token == fake.token else fake.others.get(token)
        if user is None or not auth.startswith(("token ", "Bearer ")):
            rec.status = 401
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        request.state.user = user
        if hit is not None and not hit.after:
            return failure(rec, hit)
        response = await call_next(request)
        rec.status = response.status_code
        return failure(rec, hit) if hit is not None else response

    return Starlette(routes=[Route(p, ep, methods=m) for p, ep, m in routes(fake)],
                     middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])


class Server:
    """uvicorn in a thread on a free 127.0.0.1 port; a context manager."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        fake.base_url = f"http://127.0.0.1:{self.port}/api/v3"
        config = uvicorn.Config(build_app(fake), host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        for _ in range(500):
            if self.server.started:
                return self.fake
            self.thread.join(0.01)
        raise RuntimeError("fake GitHub did not start")

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def text(body: str, status: int = 200) -> Response:
    return PlainTextResponse(body, status_code=status,
                             headers={"Content-Type": "text/plain; charset=utf-8"})
