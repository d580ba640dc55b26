"""The endpoints of the fake GitHub (see fake_github.py for what it validates)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.forges.fake_github import BOT, TS, FakeGitHub, page, text, unprocessable
from tests.forges.github_repo import split_files

R = "/api/v3/repos/{owner}/{name}"
MAX_BODY = 65536


def routes(fake: FakeGitHub) -> list[tuple[str, Callable[..., Any], list[str]]]:
    def repo_json() -> dict[str, Any]:
        owner, name = fake.full_name.split("/")
        return {"id": 1, "name": name, "full_name": fake.full_name, "url": fake.repo_url(),
                "html_url": f"http://github.invalid/{fake.full_name}", "private": False,
                "owner": {"login": owner, "id": 2, "type": "Organization"},
                "default_branch": "main"}

    def pull_json(number: int) -> dict[str, Any]:
        pr = fake.pulls[number]
        url = f"{fake.pull_url_base or fake.repo_url()}/pulls/{number}"
        return {"id": number, "number": number, "title": pr.title, "body": pr.body,
                "state": "open", "url": url,
                "html_url": f"http://github.invalid/{fake.full_name}/pull/{number}",
                "issue_url": f"{fake.repo_url()}/issues/{number}", "user": pr.author,
                "head": {"sha": pr.head, "ref": "feature", "label": "acme:feature",
                         "repo": repo_json()},
                "base": {"sha": pr.base, "ref": "main", "label": "acme:main",
                         "repo": repo_json()},
                "changed_files": len(fake.files(number)), "created_at": TS, "updated_at": TS}

    async def get_commits(request: Request) -> Response:
        """Oldest first, like GitHub (which lists at most 250)."""
        number = request.path_params["number"]
        if number not in fake.pulls:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        pr = fake.pulls[number]
        shas = fake.repo.git("rev-list", "--reverse", f"{pr.base}..{pr.head}").split()
        return JSONResponse([
            {"sha": sha, "url": f"{fake.repo_url()}/commits/{sha}",
             "commit": {"message": fake.repo.git("log", "-1", "--format=%B", sha).strip()}}
            for sha in shas[:250]])

    async def get_repo(request: Request) -> Response:
        if f"{request.path_params['owner']}/{request.path_params['name']}" != fake.full_name:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return JSONResponse(repo_json())

    async def get_pull(request: Request) -> Response:
        number = request.path_params["number"]
        if number not in fake.pulls:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if "diff" not in request.headers.get("accept", ""):
            return JSONResponse(pull_json(number))
        pr = fake.pulls[number]
        diff = fake.repo.diff(pr.base, pr.head)
        files = fake.files(number)
        if len(files) > fake.max_diff_files or diff.count("\n") > fake.max_diff_lines:
            return JSONResponse({
                "message": "Sorry, the diff exceeded the maximum number of files (300). Consider "
                           "using 'List pull requests files' API or locally cloning the "
                           "repository instead.",
                "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
            }, status_code=406)
        return text(diff)

    async def get_files(request: Request) -> Response:
        files = fake.files(request.path_params["number"])[:3000]  # GitHub lists ≤ 3,000
        return page(request, [f.to_json() for f in files])

    async def get_commit(request: Request) -> Response:
        sha = request.path_params["sha"]
        if not fake.repo.has_commit(sha):
            return unprocessable(f"No commit found for SHA: {sha}")
        return JSONResponse({"sha": sha, "url": f"{fake.repo_url()}/commits/{sha}",
                             "html_url": f"http://github.invalid/commit/{sha}",
                             "commit": {"message": "change"}})

    async def compare(request: Request) -> Response:
        base, _, head = request.path_params["spec"].partition("...")
        if not (fake.repo.has_commit(base) and fake.repo.has_commit(head)):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if base == head:
            status = "identical"
        elif fake.repo.is_ancestor(base, head):
            status = "ahead"
        else:
            status = "behind" if fake.repo.is_ancestor(head, base) else "diverged"
        files = [f.to_json() for f in split_files(fake.repo.diff(base, head))]
        return JSONResponse({"url": f"{fake.repo_url()}/compare/{base}...{head}",
                             "html_url": "http://github.invalid/compare", "status": status,
                             "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                             "commits": [], "files": files[:300]})

    async def create_review(request: Request) -> Response:
        number = request.path_params["number"]
        data = await request.json()
        pr = fake.pulls[number]
        if data.get("commit_id", pr.head) != pr.head:
            return unprocessable("commit_id is not the head of the pull request")  # stricter
        if data.get("event") not in ("COMMENT", "APPROVE", "REQUEST_CHANGES", None):
            return unprocessable("event is invalid")
        error = validate(fake, number, data.get("comments", []))
        if error:
            return unprocessable(error)
        pending = data.get("event") is None  # seen only by its author until submitted
        with fake.lock:
            if pending and any(r["state"] == "PENDING" and r["user"]["id"] == request.state.user[
                    "id"] and r["number"] == number for r in fake.reviews):
                return unprocessable("User can only have one pending review per pull request")
            review = {"id": fake.next_id(), "user": request.state.user, "body": data.get("body", ""),
                      "state": "PENDING" if pending else "COMMENTED", "commit_id": pr.head,
                      "submitted_at": None if pending else TS, "number": number,
                      "html_url": "http://github.invalid/review",
                      "pull_request_url": f"{fake.repo_url()}/pulls/{number}"}
            fake.reviews.append(review)
            for c in data.get("comments", []):
                fake.review_comments.append(comment_json(c, review["id"], pr.head, number,
                                                         request.state.user))
        return JSONResponse(review)

    def comment_json(c: dict[str, Any], review_id: int, sha: str, number: int,
                     user: dict[str, Any]) -> dict[str, Any]:
        cid = fake.next_id()
        return {"id": cid, "url": f"{fake.repo_url()}/pulls/comments/{cid}",
                "html_url": f"http://github.invalid/c/{cid}", "pull_request_review_id": review_id,
                "number": number, "body": c["body"], "path": c["path"], "line": c["line"],
                "side": c.get("side", "RIGHT"), "start_line": c.get("start_line"),
                "start_side": c.get("start_side"), "original_line": c["line"],
                "commit_id": sha, "original_commit_id": sha, "user": user, "diff_hunk": "@@",
                "subject_type": "line", "created_at": TS, "updated_at": TS}

    def rolled_up(c: dict[str, Any], on: str = "pulls") -> dict[str, Any]:
        """A comment with GitHub's `reactions` rollup (counts by content)."""
        mine = [r["content"] for r in fake.reactions if (r["on"], r["id"]) == (on, c["id"])]
        counts = {k: mine.count(k) for k in ("+1", "-1", "laugh", "confused", "heart",
                                             "hooray", "rocket", "eyes")}
        return {**c, "reactions": {"total_count": len(mine), **counts}}

    async def list_review_comments(request: Request) -> Response:
        number = request.path_params["number"]
        return page(request, [rolled_up(c) for c in fake.submitted() if c["number"] == number])

    async def reviews(request: Request) -> Response:
        """A pull request's reviews; a pending one only to its author."""
        number, me = request.path_params["number"], request.state.user["id"]
        return page(request, [r for r in fake.reviews if r["number"] == number
                              and (r["state"] != "PENDING" or r["user"]["id"] == me)])

    async def review_comments(request: Request) -> Response:
        rid, me = request.path_params["rid"], request.state.user["id"]
        if not any(r["id"] == rid and (r["state"] != "PENDING" or r["user"]["id"] == me)
                   for r in fake.reviews):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return page(request, [c for c in fake.review_comments
                              if c["pull_request_review_id"] == rid])

    async def pending_review(request: Request) -> Response:
        """DELETE a pending review (with its comments), or POST …/events to submit it."""
        rid, me = request.path_params["rid"], request.state.user["id"]
        review = next((r for r in fake.reviews if r["id"] == rid
                       and (r["state"] != "PENDING" or r["user"]["id"] == me)), None)
        if review is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if review["state"] != "PENDING":
            return unprocessable("Can not change a non-pending pull request review")
        with fake.lock:
            if request.method == "DELETE":
                fake.reviews.remove(review)
                fake.review_comments[:] = [c for c in fake.review_comments
                                           if c["pull_request_review_id"] != rid]
                return JSONResponse(review)
            if (await request.json()).get("event") not in ("COMMENT", "APPROVE",
                                                           "REQUEST_CHANGES"):
                return unprocessable("event is invalid")
            review.update(state="COMMENTED", submitted_at=TS)
        return JSONResponse(review)

    async def review_comment(request: Request) -> Response:
        if request.method == "GET":
            for c in fake.submitted():
                if c["id"] == request.path_params["cid"]:
                    return JSONResponse(rolled_up(c))
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return await edit(request, fake.review_comments)

    async def issue_comments(request: Request) -> Response:
        number = request.path_params["number"]
        if request.method == "GET":
            return page(request, [c for c in fake.issue_comments if c["number"] == number])
        body = (await request.json())["body"]
        if len(body) > MAX_BODY:
            return unprocessable("Body is too long (maximum is 65536 characters)")
        cid = fake.next_id()
        comment = {"id": cid, "number": number, "body": body, "user": request.state.user,
                   "url": f"{fake.repo_url()}/issues/comments/{cid}",
                   "issue_url": f"{fake.repo_url()}/issues/{number}",
                   "html_url": f"http://github.invalid/ic/{cid}",
                   "created_at": TS, "updated_at": TS}
        fake.issue_comments.append(comment)
        return JSONResponse(comment, status_code=201)

    async def edit_issue_comment(request: Request) -> Response:
        if request.method == "GET":
            return one(fake.issue_comments, request.path_params["cid"])
        return await edit(request, fake.issue_comments)

    def one(store: list[dict[str, Any]], cid: int) -> Response:
        found = next((c for c in store if c["id"] == cid), None)
        return JSONResponse(found) if found else JSONResponse({"message": "Not Found"},
                                                              status_code=404)

    async def reply(request: Request) -> Response:
        """GitHub answers 404 unless the comment is a top-level review comment of this pull
        request: replies to replies are not supported."""
        number, cid = request.path_params["number"], request.path_params["cid"]
        root = next((c for c in fake.review_comments if c["id"] == cid
                     and c["number"] == number and not c.get("in_reply_to_id")), None)
        if root is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        body = (await request.json()).get("body")
        if not isinstance(body, str) or not body or len(body) > MAX_BODY:
            return unprocessable("body is missing or too long")
        with fake.lock:
            comment = comment_json({"body": body, "path": root["path"], "line": root["line"],
                                    "side": root["side"]}, root["pull_request_review_id"],
                                   root["commit_id"], number, request.state.user)
            comment["in_reply_to_id"] = cid
            fake.review_comments.append(comment)
        return JSONResponse(comment, status_code=201)

    async def reactions(request: Request) -> Response:
        on, cid = request.path_params["on"], request.path_params["cid"]
        if on not in ("pulls", "issues"):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        store = fake.review_comments if on == "pulls" else fake.issue_comments
        if not any(c["id"] == cid for c in store):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        mine = [r for r in fake.reactions if (r["on"], r["id"]) == (on, cid)]
        if request.method == "GET":
            return page(request, [{"id": i, "content": r["content"], "user": r["user"],
                                   "created_at": TS} for i, r in enumerate(mine, 1)])
        content = (await request.json()).get("content")
        if content not in ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"):
            return unprocessable("content is not a valid reaction")
        reaction = {"on": on, "id": cid, "content": content, "user": request.state.user}
        fake.reactions.append(reaction)
        return JSONResponse({"id": len(fake.reactions), "content": content,
                             "user": request.state.user, "created_at": TS}, status_code=201)

    async def permission(request: Request) -> Response:
        login = request.path_params["login"]
        level = fake.permissions.get(login, "read")
        return JSONResponse({"permission": level, "role_name": level,
                             "user": {"login": login, "id": 1, "type": "User"}})

    async def hooks(request: Request) -> Response:
        """GitHub lists a repository's webhooks to its admins only, and answers anyone else
        404, as if there were no repository."""
        if fake.permissions.get(request.state.user["login"]) != "admin":
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return page(request, [{"type": "Repository", "name": "web", "active": True,
                               "events": ["push"], **h,
                               "config": {"content_type": "json", "insecure_ssl": "0",
                                          **h.get("config", {})}} for h in fake.hooks])

    async def graphql(request: Request) -> Response:
        """The GraphQL calls the bot makes: a pull request's review threads (each named after
        its first comment), resolveReviewThread, and the issues it closes."""
        data = await request.json()
        query, variables = data.get("query", ""), data.get("variables") or {}
        roots = [c for c in fake.submitted() if not c.get("in_reply_to_id")]
        if "resolveReviewThread" in query:
            thread = variables.get("id", "")
            root = next((c for c in roots if f"PRRT_{c['id']}" == thread), None)
            if root is None:
                return JSONResponse({"data": None, "errors": [
                    {"type": "NOT_FOUND", "message": f"Could not resolve to a node with the "
                     f"global id of '{thread}'"}]})
            fake.resolved[root["id"]] = request.state.user["login"]
            return JSONResponse({"data": {"resolveReviewThread": {
                "thread": {"id": thread, "isResolved": True}}}})
        if "closingIssuesReferences" in query and variables.get("number") in fake.pulls:
            nodes = fake.closing(variables["number"])[:variables.get("first", 10)]
            return JSONResponse({"data": {"repository": {"pullRequest": {
                "closingIssuesReferences": {"nodes": nodes}}}}})
        if "reviewThreads" not in query or variables.get("number") not in fake.pulls:
            return JSONResponse({"data": None, "errors": [{"message": "unknown query"}]})
        nodes = [{"id": f"PRRT_{c['id']}", "isResolved": c["id"] in fake.resolved,
                  "resolvedBy": ({"login": fake.resolved[c["id"]]} if c["id"] in fake.resolved
                                 else None),
                  "comments": {"nodes": [{"databaseId": c["id"]}]}}
                 for c in roots if c["number"] == variables["number"]]
        return JSONResponse({"data": {"repository": {"pullRequest": {"reviewThreads": {
            "nodes": nodes, "pageInfo": {"hasNextPage": False, "endCursor": None}}}}}})

    async def edit(request: Request, store: list[dict[str, Any]]) -> Response:
        body = (await request.json())["body"]
        if len(body) > MAX_BODY:
            return unprocessable("Body is too long (maximum is 65536 characters)")
        for c in store:
            if c["id"] == request.path_params["cid"]:
                # its author edits a comment, and anyone with write access anyone's
                if c["user"]["id"] != request.state.user["id"] and fake.permissions.get(
                        request.state.user["login"]) not in ("write", "maintain", "admin"):
                    return JSONResponse({"message": "Not Found"}, status_code=404)
                c["body"], c["updated_at"] = body, "2026-01-01T00:05:00Z"
                return JSONResponse(c)
        return JSONResponse({"message": "Not Found"}, status_code=404)

    async def get_user(request: Request) -> Response:
        if fake.user_forbidden and request.state.user is BOT:
            return JSONResponse({"message": "Resource not accessible by integration"},
                                status_code=403)
        return JSONResponse({**request.state.user, "url": f"{fake.base_url}/user"})

    async def contents(request: Request) -> Response:
        ref = request.query_params.get("ref", "main")
        path = request.path_params["path"]
        blob = fake.repo.show(ref, path)
        if blob is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if fake.repo.git("cat-file", "-t", f"{ref}:{path}").strip() == "tree":
            # a directory: GitHub lists its entries (an array), whatever the Accept header
            names = fake.repo.git("ls-tree", "--name-only", f"{ref}:{path}").split()
            return JSONResponse([{"type": "file", "name": n, "path": f"{path}/{n}",
                                  "sha": "0" * 40, "size": 0,
                                  "url": f"{fake.repo_url()}/contents/{path}/{n}"}
                                 for n in names])
        if "raw" in request.headers.get("accept", ""):
            return text(blob)
        import base64
        return JSONResponse({"type": "file", "encoding": "base64", "path": path,
                             "name": path.rsplit("/", 1)[-1], "sha": "0" * 40,
                             "size": len(blob.encode()),
                             "url": f"{fake.repo_url()}/contents/{path}",
                             "content": base64.b64encode(blob.encode()).decode()})

    async def tarball(request: Request) -> Response:
        ref = request.path_params["ref"]
        if not fake.repo.has_commit(ref):
            return JSONResponse({"message": "Not Found"}, status_code=404)
        root = fake.base_url.removesuffix("/api/v3")
        link = fake.archive_link or (f"{root}/_codeload/{fake.full_name}/legacy.tar.gz/{ref}"
                                     f"?token={fake.codeload_token}")
        return Response(status_code=302, headers={"Location": link})

    async def codeload(request: Request) -> Response:
        sha = request.path_params["sha"]
        if fake.archive is not None:
            return Response(fake.archive, media_type="application/x-gzip")
        prefix = f"{fake.full_name.replace('/', '-')}-{sha[:7]}/"
        return Response(fake.repo.archive(sha, prefix), media_type="application/x-gzip")

    return [
        ("/_codeload/{owner}/{name}/legacy.tar.gz/{sha}", codeload, ["GET"]),
        (R + "/tarball/{ref:path}", tarball, ["GET"]),
        ("/api/v3/user", get_user, ["GET"]),
        (R + "/contents/{path:path}", contents, ["GET"]),
        (R, get_repo, ["GET"]),
        (R + "/pulls/{number:int}", get_pull, ["GET"]),
        (R + "/pulls/{number:int}/files", get_files, ["GET"]),
        (R + "/pulls/{number:int}/commits", get_commits, ["GET"]),
        (R + "/pulls/{number:int}/reviews", create_review, ["POST"]),
        (R + "/pulls/{number:int}/reviews", reviews, ["GET"]),
        (R + "/pulls/{number:int}/reviews/{rid:int}", pending_review, ["DELETE"]),
        (R + "/pulls/{number:int}/reviews/{rid:int}/events", pending_review, ["POST"]),
        (R + "/pulls/{number:int}/reviews/{rid:int}/comments", review_comments, ["GET"]),
        (R + "/pulls/{number:int}/comments", list_review_comments, ["GET"]),
        (R + "/pulls/comments/{cid:int}", review_comment, ["GET", "PATCH"]),
        (R + "/issues/{number:int}/comments", issue_comments, ["GET", "POST"]),
        (R + "/issues/comments/{cid:int}", edit_issue_comment, ["GET", "PATCH"]),
        (R + "/pulls/{number:int}/comments/{cid:int}/replies", reply, ["POST"]),
        (R + "/{on:str}/comments/{cid:int}/reactions", reactions, ["GET", "POST"]),
        (R + "/collaborators/{login}/permission", permission, ["GET"]),
        (R + "/hooks", hooks, ["GET"]),
        ("/api/graphql", graphql, ["POST"]),
        (R + "/commits/{sha}", get_commit, ["GET"]),
        (R + "/compare/{spec:path}", compare, ["GET"]),
    ]


def validate(fake: FakeGitHub, number: int, comments: list[dict[str, Any]]) -> str | None:
    """GitHub's checks on review comments; the first failure rejects the whole review."""
    files = {f.filename: f for f in fake.files(number)}
    for c in comments:
        if len(c.get("body", "")) > MAX_BODY:
            return "Body is too long (maximum is 65536 characters)"
        f = files.get(c.get("path", ""))
        if f is None:
            return "Path could not be resolved"
        if "position" in c or not isinstance(c.get("line"), int):
            return "Line could not be resolved"  # the bot never uses the legacy `position`
        side = c.get("side", "RIGHT")
        if side not in ("LEFT", "RIGHT"):
            return "side is invalid"
        hunk = f.hunk_index(side, c["line"])
        if hunk is None:
            return "Pull request review thread line must be part of the diff"
        if c.get("start_line") is not None:
            start_side = c.get("start_side", side)
            if f.hunk_index(start_side, c["start_line"]) != hunk:
                return ("Pull request review thread start line must be part of the same hunk "
                        "as the line.")
            if start_side == side and c["start_line"] >= c["line"]:
                return "Pull request review thread start_line must precede the end line."
    return None
