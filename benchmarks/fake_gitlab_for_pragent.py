"""The strict fake GitLab of tests/forges, wrapped so that PR-Agent can run against it too.

tests/forges/fake_gitlab.py (owned by the forge tests) serves one merge request from a real git
repository and validates every posted position as GitLab does. PR-Agent additionally asks for
the project itself, its languages, repository files as JSON (`.pr_agent.toml`, file contents at
a ref, base64) and the current user. Those answers live here, in front of the fake's own router,
so the fake stays untouched: the extra routes are tried first, everything else goes to the
fake's `route`. Only this benchmark uses it.

    with fake_gitlab_for(old_tree, new_tree) as state:
        state.url, state.requests  # the fake's State: recorded requests with their status
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after $PYTHONPATH (a pinned snapshot of the code)

import tests.forges.fake_gitlab_routes as _routes
from tests.forges.fake_gitlab import FakeGitLab, State
from tests.forges.gitrepo import Repo

TOKEN = "glpat-bench-t0ken-0000"
PROJECT_PATH = "grp/proj"
PROJECT_ID = 42
IID = 7

Result = tuple[int, Any, dict[str, str]]
_P = r"^/projects/(?P<pid>.+?)"  # ids or unquoted paths (grp/proj)


def _project(state: State, m: Any, q: Any, b: Any) -> Result:
    return (
        200,
        {
            "id": state.project_id,
            "name": "proj",
            "path": "proj",
            "path_with_namespace": state.project_path,
            "default_branch": "main",
            "web_url": f"http://gitlab.example/{state.project_path}",
            "namespace": {"full_path": "grp"},
        },
        {},
    )


def _languages(state: State, m: Any, q: Any, b: Any) -> Result:
    exts: dict[str, int] = {}
    for d in state.diffs():
        ext = Path(str(d["new_path"])).suffix
        exts[ext] = exts.get(ext, 0) + 1
    names = {".py": "Python", ".js": "JavaScript", ".md": "Markdown", ".toml": "TOML"}
    total = sum(exts.values()) or 1
    out: dict[str, float] = {}
    for ext, n in exts.items():
        name = names.get(ext, "Text")
        out[name] = round(out.get(name, 0.0) + 100.0 * n / total, 2)
    return 200, out, {}


def _file_json(state: State, m: Any, q: Any, b: Any) -> Result:
    """GET /projects/:id/repository/files/:path?ref= (JSON, base64), as python-gitlab's files.get."""
    ref = (q.get("ref") or ["main"])[0]
    path = m["fp"]
    try:
        data = subprocess.run(
            ["git", "show", f"{ref}:{path}"], cwd=state.repo.root, capture_output=True, check=True
        ).stdout
    except subprocess.CalledProcessError:
        return 404, {"message": "404 File Not Found"}, {}
    return (
        200,
        {
            "file_name": Path(path).name,
            "file_path": path,
            "size": len(data),
            "encoding": "base64",
            "content": base64.b64encode(data).decode(),
            "ref": ref,
            "blob_id": hashlib.sha1(data).hexdigest(),
            "commit_id": state.head,
            "last_commit_id": state.head,
            "content_sha256": hashlib.sha256(data).hexdigest(),
        },
        {},
    )


def _user(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, {"id": 1, "username": "reviewbot", "name": "bot"}, {}


def _mr(state: State, m: Any, q: Any, b: Any) -> Result:
    """The fake's MR, plus the fields PR-Agent reads and the fake leaves out (real GitLab has them)."""
    return (
        200,
        {
            **state.mr_json(),
            "description": "Benchmark merge request.",
            "labels": [],
            "draft": False,
            "author": {"id": 2, "username": "dev", "name": "Dev"},
            "source_project_id": state.project_id,
            "target_project_id": state.project_id,
            "created_at": "2026-01-01T00:00:00.000Z",
            "updated_at": "2026-01-01T00:00:00.000Z",
            "merge_status": "can_be_merged",
            "work_in_progress": False,
            "references": {"full": f"{state.project_path}!{state.iid}"},
        },
        {},
    )


def _versions(state: State, m: Any, q: Any, b: Any) -> Result:
    return (
        200,
        [
            {
                "id": 1,
                "head_commit_sha": state.head,
                "base_commit_sha": state.base,
                "start_commit_sha": state.start,
                "created_at": "2026-01-01T00:00:00.000Z",
                "merge_request_id": 1,
                "state": "collected",
                "real_size": str(len(state.diffs())),
            }
        ],
        {},
    )


def _delete_note(state: State, m: Any, q: Any, b: Any) -> Result:
    """PR-Agent deletes its temporary 'Preparing review...' note."""
    nid = int(m["nid"])
    for d in list(state.discussions):
        d["notes"] = [n for n in d["notes"] if n["id"] != nid]
        if not d["notes"]:
            state.discussions.remove(d)
    return 204, b"", {}


def _labels(state: State, m: Any, q: Any, b: Any) -> Result:
    return 200, [], {}


EXTRA_ROUTES = [
    ("GET", _P + r"/merge_requests/(?P<iid>\d+)", _mr),
    ("GET", _P + r"/merge_requests/(?P<iid>\d+)/versions", _versions),
    ("GET", _P + r"/repository/files/(?P<fp>.+?)(?<!/raw)", _file_json),
    ("GET", _P + r"/languages", _languages),
    ("GET", _P + r"/labels", _labels),
    ("GET", _P, _project),
    ("GET", r"^/user", _user),
    ("DELETE", _P + r"/merge_requests/(?P<iid>\d+)/notes/(?P<nid>\d+)", _delete_note),
]


def _route_with_extras(original: Any) -> Any:
    def route(
        state: State,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: Any,
        max_per_page: int,
        url: str,
    ) -> Result:
        for verb, pattern, fn in EXTRA_ROUTES:
            m = re.match(pattern + "$", path)
            if verb == method and m:
                if "pid" in m.groupdict() and m["pid"] not in (
                    str(state.project_id),
                    state.project_path,
                ):
                    continue  # e.g. "grp/proj/languages" taken as a project path
                if "iid" in m.groupdict() and int(m["iid"]) != state.iid:
                    return 404, {"message": "404 Not found"}, {}
                return fn(state, m, query, body)
        return original(state, method, path, query, body, max_per_page, url)

    return route


class FakeGitLabForPRAgent(FakeGitLab):
    """FakeGitLab whose handler tries EXTRA_ROUTES before the fake's own router."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        original = _routes.route
        _routes.route = _route_with_extras(original)  # read once, when the handler is built
        try:
            super().__init__(*args, **kwargs)
        finally:
            _routes.route = original


def make_repo(root: Path, old: dict[str, bytes], new: dict[str, bytes]) -> tuple[Repo, str, str]:
    """A git repo: `old` committed on main, `new` on branch feature. Returns (repo, base, head)."""
    if root.exists():  # a previous run's repo
        shutil.rmtree(root)
    repo = Repo(root)
    repo.write(dict(old))
    base = repo.commit("base")
    repo.checkout("feature", create=True)
    changes: dict[str, str | bytes | None] = {p: None for p in old if p not in new}
    changes.update(new)
    repo.write(changes)
    head = repo.commit("feature work")
    return repo, base, head


@contextlib.contextmanager
def fake_gitlab_for(
    old: dict[str, bytes], new: dict[str, bytes], workdir: Path | None = None
) -> Iterator[State]:
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fake-gl-")))
        repo, base, head = make_repo(workdir / "repo", old, new)
        fake = FakeGitLabForPRAgent(
            repo,
            base=base,
            head=head,
            project_id=PROJECT_ID,
            project_path=PROJECT_PATH,
            iid=IID,
            token=TOKEN,
        )
        state = stack.enter_context(fake)
        yield state


def mr_url(state: State) -> str:
    return f"{state.url}/{state.project_path}/-/merge_requests/{state.iid}"


def posted_positions(state: State, since: int = 0) -> dict[str, int]:
    """Positioned comments posted after request #since: accepted (2xx) vs refused (400)."""
    out = {"accepted": 0, "refused": 0, "other": 0, "unpositioned_notes": 0}
    for r in state.requests[since:]:
        if r.method != "POST" or not re.search(r"/(discussions|draft_notes|notes)$", r.path):
            continue
        body = r.body if isinstance(r.body, dict) else {}
        if not body.get("position"):
            out["unpositioned_notes"] += 1
        elif r.status is not None and 200 <= r.status < 300:
            out["accepted"] += 1
        elif r.status == 400:
            out["refused"] += 1
        else:
            out["other"] += 1
    return out
