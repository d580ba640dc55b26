"""End to end through the shared posting flow (`review_change_request`) against the fake GitHub."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from reviewbot.choices import ReviewMode
from reviewbot.config import Settings
from reviewbot.diff import Side
from reviewbot.errors import ForgeError
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.forge import GitHubForge
from reviewbot.forges.markers import decode
from tests.forges.fake_github import FakeGitHub, Server
from tests.forges.github_repo import GitRepo
from tests.forges.github_support import (  # noqa: F401 - fake_github: fixture "fake"
    APP_NEW,
    Reviewer,
    fake_github,
    finding,
    forge,
)


def _summaries(fake: FakeGitHub) -> list[dict]:  # type: ignore[type-arg]
    return [c for c in fake.issue_comments
            if (decode(c["body"]) or {}).get("kind") == "summary"]


def _fingerprints(fake: FakeGitHub) -> list[str]:
    return [decode(c["body"])["fingerprint"] for c in fake.review_comments]


def test_full_review_posts_everything_with_no_422_and_a_rerun_posts_nothing(
        fake: FakeGitHub) -> None:
    reviewer = Reviewer(extra=[finding("assets/logo.png", 1), finding("src/app.py", None)])
    run = review_change_request(forge(fake, batch_size=8), reviewer, mode=ReviewMode.FULL)
    assert run.complete and run.exit_code == 0, run.errors
    assert len(run.to_post) == 30 and len(fake.reviews) == 4  # 8 + 8 + 8 + 6
    assert len(fake.review_comments) == len(run.outcome.posted) == len(run.to_post)
    # the one 404 allowed: the repository has no AGENTS.md on its base branch
    assert [r.path for r in fake.requests if r.status >= 400] == [
        "/api/v3/repos/acme/widgets/contents/AGENTS.md"]
    assert sorted(_fingerprints(fake)) == sorted(f.fingerprint for f in run.to_post)
    for c in fake.review_comments:  # suggestions only where GitHub can apply them
        assert ("```suggestion" in c["body"]) <= (c["side"] == "RIGHT")
    sides = {(c["path"], c["side"]) for c in fake.review_comments}
    assert ("docs/removed.md", "LEFT") in sides and ("src/new_name.py", "RIGHT") in sides
    [summary] = _summaries(fake)
    assert decode(summary["body"])["last_reviewed_sha"] == fake.pulls[7].head
    assert "assets/logo.png" in summary["body"] and "Review complete" in summary["body"]

    again = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL)
    assert again.to_post == [] and len(again.already_posted) == len(run.to_post)
    assert len(fake.review_comments) == len(run.to_post)
    assert len(_summaries(fake)) == 1 and len(fake.issue_comments) == 1  # edited in place
    assert review_change_request(forge(fake), Reviewer(), mode=ReviewMode.INCREMENTAL).mode == "up-to-date"


def test_push_reviews_only_new_commits_and_marks_gone_findings_outdated(fake: FakeGitHub) -> None:
    first = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.INCREMENTAL)
    assert first.mode == "full" and first.complete
    before = len(fake.review_comments)
    fake.repo.write("src/added.py", "import os\n\nprint(os.getcwd(), flush=True)\n")
    fake.push(7, fake.repo.commit("fix"))

    reviewer = Reviewer(removed=False)  # the removed line is not reported again
    second = review_change_request(forge(fake), reviewer, mode=ReviewMode.INCREMENTAL)
    assert second.mode == "incremental" and second.complete, second.errors
    assert [f.path for f in reviewer.seen[0].files] == ["src/added.py"]
    new = fake.review_comments[before:]
    assert new and {c["path"] for c in new} == {"src/added.py"}
    assert not fake.statuses(422)
    outdated = [c for c in fake.review_comments if (decode(c["body"]) or {}).get("state")]
    assert [(c["path"], c["line"]) for c in outdated] == [("src/added.py", 3)]
    assert outdated[0]["body"].startswith("**Outdated**")
    assert len(second.to_resolve) == 1

    third = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL)
    assert third.to_post == [] and third.to_resolve == []  # already outdated: not touched again


@pytest.mark.parametrize("applied", [False, True])
def test_crash_mid_post_then_rerun_loses_nothing_and_doubles_nothing(
        fake: FakeGitHub, applied: bool) -> None:
    fake.fail_next("POST", r"/reviews$", 500, after=applied, skip=1)  # the 2nd of 3 reviews
    run = review_change_request(forge(fake, batch_size=12), Reviewer(), mode=ReviewMode.INCREMENTAL)
    total = len(run.to_post)
    if applied:  # the review landed though the answer was lost: counted as posted
        assert run.complete and len(fake.review_comments) == total
    else:
        assert not run.complete and run.exit_code == 3
        assert len(run.outcome.posted) == 12 and len(run.outcome.failed) == total - 12
        assert len(fake.review_comments) == 12  # the 3rd review was not attempted
        assert "incomplete" in _summaries(fake)[0]["body"].lower()
        assert "last_reviewed_sha" not in decode(_summaries(fake)[0]["body"])
    rerun = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.INCREMENTAL)
    assert rerun.complete
    assert sorted(_fingerprints(fake)) == sorted({f.fingerprint for f in run.to_post})
    assert len(_summaries(fake)) == 1


def test_dry_run_posts_nothing_and_shows_the_payloads(fake: FakeGitHub) -> None:
    run = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL, dry_run=True)
    assert run.payloads and sum(len(p["comments"]) for p in run.payloads) == len(run.to_post)
    # a GraphQL query is a POST that writes nothing; a mutation would
    assert not [r for r in fake.requests if r.method in ("POST", "PATCH")
                and "mutation" in str((r.body or {}).get("query", "mutation"))]


@pytest.mark.parametrize("count", [300, 320])  # 320 > 300 files: 406, then /files
def test_a_300_file_pr(tmp_path: Path, count: int) -> None:
    repo = GitRepo(tmp_path / "big")
    for i in range(count):
        repo.write(f"pkg/mod{i:03}.py", "".join(f"v{n} = {n}\n" for n in range(12)))
    base = repo.commit("base")
    for i in range(count):
        repo.write(f"pkg/mod{i:03}.py",
                   "".join(f"v{n} = {n}{f'  # {i}' if n == 6 else ''}\n" for n in range(12)))
    gh = FakeGitHub(repo)
    gh.open_pull(base, repo.commit("head"), number=3)
    with Server(gh):
        run = review_change_request(forge(gh, number=3), Reviewer(every=7), mode=ReviewMode.FULL)
        assert run.complete, run.errors
        assert bool(gh.statuses(406)) == (count > 300) and not gh.statuses(422)
        assert len(run.to_post) == count * 2 and len(gh.review_comments) == count * 2
        sizes = [len(r.body["comments"]) for r in gh.requests if r.path.endswith("/reviews")]
        assert max(sizes) == 30 and sum(sizes) == count * 2
        again = review_change_request(forge(gh, number=3), Reviewer(every=7), mode=ReviewMode.FULL)
        assert again.to_post == [] and len(gh.review_comments) == count * 2


def test_tokens_never_appear_in_logs_errors_or_output(
        fake: FakeGitHub, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # PyGithub's and urllib3's debug logs included
    text = ""
    fake.fail_next("GET", r"/pulls/7/comments$", 500, times=4)  # 1 try + 3 retries
    with pytest.raises(ForgeError) as err:  # cannot tell what is already posted: stop
        review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL)
    text += str(err.value) + err.value.body
    fake.fail_next("POST", r"/reviews$", 422, message="No commit found for SHA: x")
    run = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL)
    assert not run.complete and "HTTP 422" in run.errors[0]
    bad = Settings(github_url=fake.base_url, github_token="ghp_other_secret_token_42", retries=0)
    with pytest.raises(ForgeError) as err:
        review_change_request(GitHubForge(ForgeSettings.github(bad), fake.full_name, 7), Reviewer())
    text += str(err.value) + err.value.body + caplog.text + json.dumps(run.to_dict())
    text += "".join(c["body"] for c in fake.issue_comments + fake.review_comments)
    assert fake.token not in text and "ghp_other_secret_token_42" not in text
    assert next(r.authorization for r in fake.requests if r.status == 200) == f"token {fake.token}"


def test_findings_on_removed_lines_of_a_renamed_file(fake: FakeGitHub) -> None:
    extra = [finding("src/new_name.py", 13, Side.OLD, title="old side of a rename")]
    run = review_change_request(forge(fake), Reviewer(every=1000, extra=extra), mode=ReviewMode.FULL)
    assert run.complete
    [c] = [c for c in fake.review_comments
           if c["side"] == "LEFT" and c["path"] == "src/new_name.py"]
    assert c["line"] == 13


def test_incremental_old_side_findings_are_not_posted_on_the_base_lines(
        fake: FakeGitHub) -> None:
    """After a push, "line 20" removed by the push is old line 21 of the previous head but
    old line 20 of the PR's base: GitHub's LEFT side. It must not land on base line 21."""
    review_change_request(forge(fake), Reviewer(every=1000), mode=ReviewMode.INCREMENTAL)
    fake.repo.write("src/app.py", APP_NEW.replace("line 20\n", ""))
    fake.push(7, fake.repo.commit("drop line 20"))
    before = len(fake.review_comments)
    run = review_change_request(forge(fake), Reviewer(), mode=ReviewMode.INCREMENTAL)
    assert run.mode == "incremental" and run.complete
    assert not [c for c in fake.review_comments[before:] if c["side"] == "LEFT"]
    assert any(f.side is Side.OLD for f in run.unanchored)  # in the summary instead


def test_a_review_reads_the_pull_request_and_its_comments_once(fake: FakeGitHub) -> None:
    review_change_request(forge(fake), Reviewer(), mode=ReviewMode.FULL)
    reads = Counter(r.path.split("?")[0] for r in fake.requests if r.method == "GET")
    pull = f"/api/v3/repos/{fake.full_name}/pulls/7"
    # the pull request twice: its JSON, then its diff (another media type)
    assert (reads[pull], reads[pull + "/comments"], reads[pull.replace("pulls", "issues")
                                                          + "/comments"]) == (2, 1, 1)


@pytest.mark.parametrize("who, may_dismiss, counted", [
    ("author", False, True),  # one click of the author's is not the team's verdict
    ("maria", False, False),  # a collaborator other than the author closes it
    ("author", True, False),  # author_may_dismiss: the team lets authors close findings
])
def test_only_the_team_closes_a_finding_for_the_gate(fake: FakeGitHub, who: str,
                                                     may_dismiss: bool, counted: bool) -> None:
    fake.pulls[7].author = {"login": "Alex-Author", "id": 812, "type": "User"}
    review_change_request(forge(fake), Reviewer(), mode=ReviewMode.INCREMENTAL)
    root = fake.review_comments[0]
    # resolveReviewThread as its GraphQL answer names the resolver (GitHub logins ignore case)
    fake.resolved[root["id"]] = "alex-author" if who == "author" else who
    fingerprint = decode(root["body"])["fingerprint"]
    # an unrelated push: the incremental review does not look at that line again
    fake.repo.write("src/later.py", "def later():\n    return 1\n")
    fake.push(7, fake.repo.commit("unrelated"))
    run = review_change_request(forge(fake), Reviewer(removed=False), mode=ReviewMode.INCREMENTAL,
                                author_may_dismiss=may_dismiss)
    assert run.mode == "incremental"
    gated = {f.fingerprint for f in run.result.gating()}
    assert (fingerprint in gated) is counted
    summary = _summaries(fake)[0]["body"]
    assert ("1 finding(s) resolved by the author, still counted" in summary) is counted
