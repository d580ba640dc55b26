"""Posting to the strict fake GitLab: every kind of line, renames, ranges, suggestions, binaries."""

from __future__ import annotations

import hashlib
import json

from reviewbot.choices import ReviewMode
from reviewbot.diff import Side
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.markers import FindingMarker, decode
from tests.forges.fake_gitlab import BOT_USER, Fault
from tests.forges.gitlab_support import Env, env_fixture, finding, make_forge, reviewer, sha_marker  # noqa: F401

WRITES = ("POST", "PUT", "DELETE")


def _by_title(env: Env) -> dict[str, dict]:  # type: ignore[type-arg]
    out = {}
    for note in env.gitlab.diff_notes():
        title = note["body"].split(": ", 1)[1].split("\n", 1)[0]
        out[title] = note
    return out


def test_a_real_multi_file_review_posts_every_anchored_finding_with_zero_400s(env: Env) -> None:
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.exit_code == 0 and run.complete
    assert 400 not in env.gitlab.statuses()
    assert env.gitlab.violations == []
    posted = env.gitlab.diff_notes()
    assert len(posted) == len(run.to_post) == len(run.outcome.posted) > 10
    # one bulk publish: one notification for the whole review
    publishes = [r for r in env.gitlab.requests if r.path.endswith("/bulk_publish")]
    assert len(publishes) == 1
    # unanchorable findings are in the summary, not at a guessed line
    summary = [n for n in env.gitlab.notes() if not n.get("position")]
    assert len(summary) == 1
    for title in ("outside the diff", "file level", "no such file", "binary"):
        assert title in summary[0]["body"]
        assert not any(title in n["body"] for n in posted)


def test_positions_follow_gitlabs_rules(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    notes = _by_title(env)
    added = notes["added line 5 changed"]["position"]
    assert added["new_line"] == 5 and "old_line" not in added
    removed = notes["removed line 5"]["position"]
    assert removed["old_line"] == 5 and "new_line" not in removed
    context = notes["context line 33"]["position"]
    assert (context["old_line"], context["new_line"]) == (33, 34)  # numbers differ: both sent
    for pos in (added, removed, context):
        assert (pos["base_sha"], pos["start_sha"], pos["head_sha"]) == (env.base, env.base, env.head)


def test_renamed_deleted_and_added_files_send_the_right_paths(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    paths = {(n["position"]["old_path"], n["position"]["new_path"]) for n in env.gitlab.diff_notes()}
    assert ("src/old_name.py", "src/new_name.py") in paths  # the real old path on a rename
    assert ("docs/removed.md", "docs/removed.md") in paths  # deleted: the same path twice
    assert ("src/added.py", "src/added.py") in paths  # added: the same path twice
    deleted = [n for n in env.gitlab.diff_notes() if n["position"]["new_path"] == "docs/removed.md"]
    assert all("new_line" not in n["position"] for n in deleted)


def test_multi_line_range_with_line_codes_and_suggestion(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    note = _by_title(env)["range line 5 changed"]
    pos = note["position"]
    sha = hashlib.sha1(b"src/app.py").hexdigest()
    # "+" lines: the old part of the line code is GitLab's running old counter (6), not 0
    assert pos["line_range"]["start"] == {"line_code": f"{sha}_6_5", "type": "new", "new_line": 5}
    assert pos["line_range"]["end"] == {"line_code": f"{sha}_6_6", "type": "new", "new_line": 6}
    assert pos["new_line"] == 6  # anchored on the last line, like GitLab's UI
    assert "```suggestion:-1+0\nfixed 1\nfixed 2\n```" in note["body"]


def test_suggestions_only_on_added_or_context_lines_and_fenced_safely(env: Env) -> None:
    forge = make_forge(env.gitlab)
    req = forge.fetch()
    fence = "use:\n```python\nx = 1\n```"
    findings = [
        finding("src/added.py", 3, suggestion=fence, title="fenced"),
        finding("src/app.py", 5, Side.OLD, suggestion="nope", title="on removed"),
    ]
    from reviewbot.anchoring import split as split_anchorable

    ok, _ = split_anchorable(findings, req.changes)
    outcome = forge.post(req, [f for f in ok])
    assert len(outcome.posted) == 2 and env.gitlab.violations == []
    bodies = {n["body"].split(": ", 1)[1].split("\n")[0]: n["body"] for n in env.gitlab.diff_notes()}
    assert bodies["fenced"].count("````suggestion:-0+0\n") == 1  # four backticks: content has a fence
    assert "suggestion" not in bodies["on removed"].replace("on removed", "")


def test_binary_and_file_level_findings_go_to_the_summary(env: Env) -> None:
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert {f.title for f in run.unanchored} >= {"binary", "file level"}
    assert not any(n["position"]["new_path"] == "img/logo.png" for n in env.gitlab.diff_notes())


def test_stale_shas_are_refused_and_the_finding_moves_to_the_summary(env: Env) -> None:
    forge = make_forge(env.gitlab)
    req = forge.fetch()
    env.repo.write({"src/app.py": "changed again\n"})
    env.gitlab.push(env.repo.commit("push"))
    outcome = forge.post(req, [finding("src/app.py", 5)])
    assert outcome.posted == [] and len(outcome.moved_to_summary) == 1
    assert env.gitlab.statuses().count(400) == 1


def test_dry_run_writes_nothing_and_returns_exactly_what_would_be_posted(env: Env) -> None:
    dry = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL, dry_run=True)
    assert not [r for r in env.gitlab.requests if r.method in WRITES]
    real = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    sent = [r.body for r in env.gitlab.requests if r.path.endswith("/draft_notes")
            and r.method == "POST"]
    assert [{"body": p["body"], "position": p["position"]} for p in dry.payloads] == \
        [{"body": b["note"], "position": b["position"]} for b in sent]
    assert [f.fingerprint for f in dry.to_post] == [f.fingerprint for f in real.outcome.posted]
    json.dumps(dry.to_dict())  # serialisable for --output json


def test_without_draft_notes_it_posts_discussions_directly(env: Env) -> None:
    env.gitlab.faults.append(Fault("GET", r"/draft_notes$", 404))
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.complete and 400 not in env.gitlab.statuses()
    creates = [r for r in env.gitlab.requests if r.method == "POST" and r.path.endswith("/discussions")]
    assert len(creates) == len(run.to_post) == len(env.gitlab.diff_notes())


def test_a_humans_own_pending_drafts_are_never_published_by_the_bot(env: Env) -> None:
    """Someone also writes with the bot's account: its drafts there are theirs too."""
    leftover = FindingMarker("from-a-crashed-run").render()
    mine = BOT_USER["id"]  # drafts are per user: these are the token user's
    env.gitlab.drafts.append({"id": 1, "note": "my private draft", "position": None,
                              "author_id": mine})
    env.gitlab.drafts.append({"id": 2, "note": f"old\n{leftover}", "position": None,
                              "author_id": mine})
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.complete
    assert env.gitlab.drafts == [{"id": 1, "note": "my private draft", "position": None,
                                  "author_id": mine}]
    assert not any(r.path.endswith("/bulk_publish") for r in env.gitlab.requests)


def test_every_comment_carries_the_finding_marker(env: Env) -> None:
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    fps = {decode(n["body"])["fingerprint"] for n in env.gitlab.diff_notes()}  # type: ignore[index]
    assert fps == {f.fingerprint for f in run.to_post}
    summary = next(n["body"] for n in env.gitlab.notes() if not n.get("position"))
    assert sha_marker(summary) == {"kind": "summary", "last_reviewed_sha": env.head}


def test_a_refused_bulk_publish_falls_back_to_one_discussion_per_finding(env: Env) -> None:
    env.gitlab.faults.append(Fault("POST", r"/bulk_publish$", 400))
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.complete and env.gitlab.drafts == []
    fps = [decode(n["body"])["fingerprint"] for n in env.gitlab.diff_notes()]  # type: ignore[index]
    assert sorted(fps) == sorted(f.fingerprint for f in run.to_post)
