"""Fetching from the fake GitLab: file kinds, too-large/collapsed/overflow files, 300 files,
429/5xx retries, self-managed settings, and no token anywhere in the output."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from reviewbot.choices import ReviewMode
from reviewbot.config import Settings
from reviewbot.diff import ChangeSet
from reviewbot.errors import ForgeError
from reviewbot.flow.posting import review_change_request
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.gitlab.api import client
from reviewbot.forges.gitlab.forge import GitLabForge
from reviewbot.result import ReviewResult, Stats
from reviewbot.tree import MAX_FILE_BYTES
from tests.forges.fake_gitlab import FakeGitLab, Fault
from tests.forges.gitlab_support import TOKEN, Env, env_fixture, finding, make_forge, reviewer  # noqa: F401
from tests.forges.gitrepo import Repo


def test_fetch_reads_diff_refs_and_every_kind_of_file(env: Env) -> None:
    req = make_forge(env.gitlab).fetch()
    assert (req.base_sha, req.start_sha, req.head_sha) == (env.base, env.base, env.head)
    kinds = {f.path: (f.status, f.old_path, f.binary) for f in req.changes.files}
    assert kinds["src/new_name.py"] == ("renamed", "src/old_name.py", False)
    assert kinds["lib/pure2.py"] == ("renamed", "lib/pure.py", False)  # pure rename: no hunks
    assert kinds["docs/removed.md"] == ("deleted", "docs/removed.md", False)
    assert kinds["src/added.py"] == ("added", None, False)
    assert kinds["img/logo.png"][2] is True
    assert req.skipped == ()
    crlf = req.changes.file("win.txt")
    assert crlf is not None and [dl.text for dl in crlf.hunks[0].lines if dl.kind == "+"] == ["B\r"]


def test_too_large_and_collapsed_files_are_fetched_another_way(env: Env) -> None:
    env.gitlab.too_large.add("src/app.py")
    env.gitlab.collapsed.add("src/added.py")
    req = make_forge(env.gitlab).fetch()
    assert req.skipped == ()
    assert len(req.changes.file("src/app.py").hunks) == 2  # type: ignore[union-attr]
    assert req.changes.file("src/added.py").changed_lines == 3  # type: ignore[union-attr]
    assert any(r.path.endswith("/changes") and r.query.get("access_raw_diffs") == ["true"]
               for r in env.gitlab.requests)


def test_a_file_gitlab_never_returns_is_reported_as_skipped_never_silently(env: Env) -> None:
    env.gitlab.never.add("src/app.py")
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL, dry_run=True)
    assert [(s.path, "too large" in s.reason) for s in run.request.skipped] == [("src/app.py", True)]
    assert any(s.path == "src/app.py" for s in run.result.stats.files_skipped)
    assert "`src/app.py`: GitLab did not return the diff: the file is too large" in run.summary


def test_overflowing_files_missing_from_diffs_are_recovered(env: Env) -> None:
    env.gitlab.hidden.add("src/new_name.py")
    req = make_forge(env.gitlab).fetch()
    assert req.changes.file("src/new_name.py") is not None and req.skipped == ()


def _three_hundred(tmp: Path) -> tuple[Repo, str, str]:
    repo = Repo(tmp / "big")
    repo.write({f"pkg/m{i:03}.py": f"a = {i}\nb = {i}\nc = {i}\n" for i in range(300)})
    base = repo.commit("base")
    repo.write({f"pkg/m{i:03}.py": f"a = {i}\nb = {i + 1}\nc = {i}\n" for i in range(300)})
    return repo, base, repo.commit("touch all 300")


def _one_per_file(changes: ChangeSet, intent: object = None) -> ReviewResult:
    found = [finding(f.path, 2, title="b changed") for f in changes.files]
    n = changes.changed_lines
    return ReviewResult(found, "", Stats(files_total=len(changes.files),
                                             files_reviewed=len(changes.files),
                                             changed_lines=n, changed_lines_sent=n))


def test_a_300_file_merge_request_is_paginated_posted_once_and_not_doubled(tmp_path: Path) -> None:
    repo, base, head = _three_hundred(tmp_path)
    with FakeGitLab(repo, base=base, head=head, token=TOKEN, max_per_page=40) as state:
        run = review_change_request(make_forge(state), _one_per_file, mode=ReviewMode.FULL)
        assert len(run.request.changes.files) == 300 and run.complete
        diff_pages = [r for r in state.requests if r.path.endswith("/diffs")]
        assert len(diff_pages) == 8  # 300 files at 40 per page, followed through Link headers
        assert len(state.diff_notes()) == 300 and 400 not in state.statuses()
        again = review_change_request(make_forge(state), _one_per_file, mode=ReviewMode.FULL)
        assert again.to_post == [] and len(again.already_posted) == 300  # read all pages
        assert len(state.diff_notes()) == 300


def test_429_with_retry_after_and_500s_are_retried(env: Env) -> None:
    env.gitlab.faults += [
        Fault("GET", r"/diffs$", 429, headers={"Retry-After": "1"}),
        Fault("GET", r"/discussions$", 500, times=2),
        Fault("POST", r"/draft_notes$", 503, times=2),
        Fault("POST", r"/draft_notes$", 429, headers={"Retry-After": "1"}, skip=3),
    ]
    start = time.monotonic()
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.complete and run.exit_code == 0
    assert time.monotonic() - start >= 2  # both Retry-After waits were honoured
    statuses = env.gitlab.statuses()
    assert statuses.count(429) == 2 and statuses.count(500) == 2 and statuses.count(503) == 2
    assert len(env.gitlab.diff_notes()) == len(run.to_post)  # nothing doubled by the retries


def test_a_summary_that_cannot_be_written_makes_the_run_incomplete(env: Env) -> None:
    env.gitlab.faults.append(Fault("POST", r"/notes$", 500, times=10**6))
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.exit_code == 3 and any("summary" in e for e in run.errors)


def test_tokens_never_appear_in_logs_errors_or_output(env: Env, caplog: pytest.LogCaptureFixture,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    Settings(gitlab_token=TOKEN)  # registers the token for redaction, as the CLI does
    env.gitlab.faults.append(Fault("POST", r"/draft_notes$", 500, times=10**6, skip=2))
    run = review_change_request(make_forge(env.gitlab), reviewer, mode=ReviewMode.FULL)
    assert run.exit_code == 3
    wrong = GitLabForge(client(ForgeSettings.gitlab(Settings(gitlab_url=env.gitlab.url,
                                        gitlab_token=TOKEN + "-wrong"))), 42, 7)
    with pytest.raises(ForgeError) as err:
        wrong.fetch()
    assert err.value.status == 401 and err.value.exit_code == 2  # the token is the input
    out = capsys.readouterr()
    blob = "\n".join([caplog.text, out.out, out.err, str(err.value), err.value.body,
                      json.dumps(run.to_dict()), run.summary, *run.errors])
    assert TOKEN not in blob and "SECRET-t0ken" not in blob
    assert "\n" not in str(err.value)  # one-line error


def test_file_content_at_head_for_extra_context(env: Env) -> None:
    forge = make_forge(env.gitlab)
    assert forge.file_at("src/new_name.py", env.head).startswith("def f0():")  # type: ignore[union-attr]
    assert forge.file_at("src/old_name.py", env.head) is None  # renamed away



def test_a_file_beyond_the_cap_is_not_read_for_context(env: Env) -> None:
    """The code around an anchor is the author's file: a 126 MB one took a reply to 689 MB."""
    env.repo.write({"big.txt": "x" * (MAX_FILE_BYTES + 1)})
    sha = env.repo.commit("a large file")
    assert make_forge(env.gitlab).file_at("big.txt", sha) is None  # type: ignore[union-attr]

def test_an_older_gitlab_without_the_diffs_endpoint_uses_changes(env: Env) -> None:
    env.gitlab.faults.append(Fault("GET", r"/diffs$", 404))
    req = make_forge(env.gitlab).fetch()
    assert {f.path for f in req.changes.files} >= {"src/app.py", "src/new_name.py", "img/logo.png"}
    assert req.skipped == ()
