"""Re-runs: nothing doubled, nothing lost — after a push, after a human resolves, after a crash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reviewbot.choices import ReviewMode
from reviewbot.diff import ChangeSet
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.markers import decode
from reviewbot.result import ReviewResult
from tests.forges.fake_gitlab import AUTHOR_USER, DEV_USER, Fault
from tests.forges.gitlab_support import APP_NEW, Env, env_fixture, make_forge, reviewer, sha_marker  # noqa: F401

POSTS = ("/draft_notes", "/discussions")


def _creates(env: Env) -> int:
    return sum(1 for r in env.gitlab.requests if r.method == "POST" and r.path.endswith(POSTS))


def _fingerprints(env: Env) -> Counter[str]:
    return Counter(decode(n["body"])["fingerprint"]  # type: ignore[index]
                   for n in env.gitlab.diff_notes())


def _summaries(env: Env) -> list[str]:
    return [n["body"] for n in env.gitlab.notes() if not n.get("position")]


def test_second_run_posts_nothing_new_and_edits_the_summary_in_place(env: Env) -> None:
    first = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    creates = _creates(env)
    second = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert second.to_post == [] and len(second.already_posted) == len(first.to_post)
    assert _creates(env) == creates  # not one new comment
    assert len(_summaries(env)) == 1 and any(r.method == "PUT" and "/notes/" in r.path
                                             for r in env.gitlab.requests)
    third = review_change_request(make_forge(env.gitlab), reviewer)  # incremental, same head
    assert third.mode == "up-to-date" and _creates(env) == creates


def test_rerun_after_a_push_reviews_only_new_commits_and_resolves_outdated_threads(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer)  # first run: no marker yet → full
    before = _fingerprints(env)
    env.repo.write({"src/app.py": APP_NEW.replace("line 5 changed\n", "line 5 fixed\n"),
                    "src/later.py": "def later():\n    return 1\n"})
    env.gitlab.push(env.repo.commit("second push"))
    seen: list[ChangeSet] = []

    def recording(changes: ChangeSet, intent: object = None) -> ReviewResult:
        seen.append(changes)
        return reviewer(changes)

    run = review_change_request(make_forge(env.gitlab), recording)
    assert run.mode == "incremental" and run.since_sha == env.head
    assert {f.path for f in seen[0].files} == {"src/app.py", "src/later.py"}
    assert [h.new_start for h in seen[0].file("src/app.py").hunks] == [2]  # type: ignore[union-attr]
    after = _fingerprints(env)
    assert all(n == 1 for n in after.values())  # no duplicates
    assert set(before) < set(after)  # new findings added, old ones kept
    resolved = [n for n in env.gitlab.diff_notes() if n["resolved"]]
    assert [n["body"].split("\n")[0] for n in resolved] == [
        "**major** (bug): added line 5 changed"]  # its line was rewritten by the push
    assert sha_marker(_summaries(env)[0]) == {"kind": "summary",
                                               "last_reviewed_sha": env.gitlab.head}
    assert "commits since" in _summaries(env)[0]
    # what the first review could not anchor on files this push did not touch is still listed
    assert "`img/logo.png` line 1: binary" in _summaries(env)[0]


def test_a_thread_a_human_resolved_is_never_raised_again(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert env.gitlab.resolve_by_human(lambda n: "added line 5 changed" in n["body"]) == 1
    creates = _creates(env)
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert _creates(env) == creates and run.to_resolve == []
    assert sum(n["resolved"] for n in env.gitlab.diff_notes()) == 1


@pytest.mark.parametrize("who, may_dismiss, counted", [
    (AUTHOR_USER, False, True),  # "Resolve thread" by the author: still the team's finding
    (DEV_USER, False, False),  # a member other than the author closes it
    (AUTHOR_USER, True, False),  # author_may_dismiss: the team lets authors close findings
])
def test_only_the_team_closes_a_finding_for_the_gate(env: Env, who: dict[str, Any],
                                                     may_dismiss: bool, counted: bool) -> None:
    review_change_request(make_forge(env.gitlab), reviewer)
    assert env.gitlab.resolve_by_human(lambda n: "added line 5 changed" in n["body"], who) == 1
    # an unrelated push: the incremental review does not look at that line again
    env.repo.write({"src/later.py": "def later():\n    return 1\n"})
    env.gitlab.push(env.repo.commit("unrelated push"))
    run = review_change_request(make_forge(env.gitlab), reviewer,
                                author_may_dismiss=may_dismiss)
    assert run.mode == "incremental"
    titles = [f.title for f in run.result.gating()]
    assert ("added line 5 changed" in titles) is counted
    summary = _summaries(env)[0]
    assert ("1 finding(s) resolved by the author, still counted" in summary) is counted
    # the thread is not reopened, and nothing is posted twice
    assert all(n == 1 for n in _fingerprints(env).values())


def test_full_rerun_resolves_the_bots_threads_whose_finding_is_gone(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)

    def fewer(changes: ChangeSet, intent: object = None) -> ReviewResult:
        result = reviewer(changes)
        result.findings = [f for f in result.findings if f.path != "src/added.py"]
        return result

    run = review_change_request(make_forge(env.gitlab), fewer, mode=ReviewMode.FULL)
    gone = {n["id"] for n in env.gitlab.diff_notes() if n["position"]["new_path"] == "src/added.py"}
    assert {c.id for c in run.to_resolve} == {str(i) for i in gone} and gone
    assert all(n["resolved"] == (n["id"] in gone) for n in env.gitlab.diff_notes())


def test_outage_mid_posting_is_incomplete_exit_3_then_a_rerun_completes_exactly_once(env: Env) -> None:
    env.gitlab.faults.append(Fault("POST", r"/draft_notes$", 500, times=10**6, skip=5))
    first = review_change_request(make_forge(env.gitlab), reviewer)
    assert first.exit_code == 3 and not first.complete
    assert len(env.gitlab.diff_notes()) == 5  # what was drafted got published
    summary = _summaries(env)[0]
    assert "Review incomplete" in summary and "will be retried" in summary
    assert sha_marker(summary) == {"kind": "summary"}  # no last_reviewed_sha: next run redoes it
    env.gitlab.faults.clear()
    second = review_change_request(make_forge(env.gitlab), reviewer)
    assert second.exit_code == 0 and second.mode == "full"
    counts = _fingerprints(env)
    assert set(counts) == {f.fingerprint for f in first.to_post} and set(counts.values()) == {1}
    assert decode(_summaries(env)[0])["last_reviewed_sha"] == env.head  # type: ignore[index]


def test_a_lost_answer_after_a_note_was_created_does_not_double_it(env: Env) -> None:
    env.gitlab.faults.append(Fault("POST", r"/draft_notes$", None, times=1, skip=2))
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.complete and run.exit_code == 0
    counts = _fingerprints(env)
    assert len(counts) == len(run.to_post) and set(counts.values()) == {1}


def test_killed_mid_posting_then_rerun_loses_nothing_and_doubles_nothing(env: Env) -> None:
    drafts: list[object] = []
    procs: list[subprocess.Popen[bytes]] = []

    def kill_on_fourth_draft(record: object) -> None:
        if record.method == "POST" and record.path.endswith("/draft_notes"):
            drafts.append(record)
            if len(drafts) == 4:
                os.kill(procs[0].pid, signal.SIGKILL)

    env.gitlab.hook = kill_on_fourth_draft
    procs.append(subprocess.Popen(
        [sys.executable, "-m", "tests.forges.gitlab_crash_runner", env.gitlab.url],
        cwd=Path(__file__).parents[3], stdout=subprocess.DEVNULL))
    assert procs[0].wait(timeout=120) == -signal.SIGKILL
    env.gitlab.hook = None
    assert len(env.gitlab.drafts) == 4 and env.gitlab.diff_notes() == []  # drafted, unpublished
    run = review_change_request(make_forge(env.gitlab), reviewer)
    assert run.complete and run.exit_code == 0
    counts = _fingerprints(env)
    assert set(counts) == {f.fingerprint for f in run.to_post} and set(counts.values()) == {1}
    assert env.gitlab.drafts == []


def test_a_review_reads_the_merge_request_its_notes_and_discussions_once(env: Env) -> None:
    review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    reads = Counter(r.path.split("?")[0] for r in env.gitlab.requests if r.method == "GET")
    mr = "/projects/42/merge_requests/7"
    assert (reads[mr], reads[mr + "/notes"], reads[mr + "/discussions"]) == (1, 1, 1)
    assert sum(reads.values()) <= 8  # also: /user, the diffs, commits, drafts, AGENTS.md
