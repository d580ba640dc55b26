"""Fetching a PR from the fake GitHub: raw diff, 406 → /files, binary files, Enterprise URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.diff import Side
from reviewbot.errors import ForgeError
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.forge import GitHubForge
from tests.forges.fake_github import FakeGitHub
from tests.forges.github_support import fake_github, forge, settings  # noqa: F401 - fixture "fake"


def _by_status(changes):  # type: ignore[no-untyped-def]
    return {f.path: f.status for f in changes.files}


def test_fetch_reads_shas_and_the_raw_diff(fake: FakeGitHub) -> None:
    req = forge(fake).fetch()
    pr = fake.pulls[7]
    assert (req.forge, req.project, req.number) == ("github", "acme/widgets", 7)
    assert (req.head_sha, req.base_sha) == (pr.head, pr.base)
    assert _by_status(req.changes) == {
        "src/app.py": "modified", "src/new_name.py": "renamed", "docs/removed.md": "deleted",
        "src/added.py": "added", "assets/logo.png": "modified", "docs/README.md": "renamed",
    }
    assert req.changes.file("assets/logo.png").binary
    assert len(req.changes.file("src/app.py").hunks) == 2
    assert req.skipped == ()
    accepts = [r for r in fake.requests if r.path.endswith("/pulls/7")]
    assert accepts and not any(r.path.endswith("/files") for r in fake.requests)


def test_406_falls_back_to_paginated_files_with_the_same_positions(fake: FakeGitHub) -> None:
    full = forge(fake).fetch().changes
    fake.max_diff_files = 2
    req = forge(fake).fetch()
    assert fake.statuses(406)
    assert _by_status(req.changes) == _by_status(full)
    for f in full.files:
        if not f.binary:
            assert req.changes.file(f.path).commentable == f.commentable, f.path
    assert [s.path for s in req.skipped] == ["assets/logo.png"]
    assert "no patch" in req.skipped[0].reason


def test_files_fallback_follows_link_headers_over_many_pages(tmp_path: Path) -> None:
    from tests.forges.fake_github import Server
    from tests.forges.github_repo import GitRepo

    repo = GitRepo(tmp_path / "r")
    for i in range(300):
        repo.write(f"pkg/m{i:03}.py", f"x = {i}\n")
    base = repo.commit("base")
    for i in range(300):
        repo.write(f"pkg/m{i:03}.py", f"x = {i}\ny = {i}\n")
    head = repo.commit("head")
    gh = FakeGitHub(repo)
    gh.open_pull(base, head, number=1)
    with Server(gh):
        gh.max_diff_files = 299
        req = forge(gh, number=1).fetch()
    assert len(req.changes.files) == 300
    assert all((Side.NEW, 2) in f.commentable for f in req.changes.files)
    pages = [r for r in gh.requests if r.path.endswith("/pulls/1/files")]
    assert len(pages) == 3  # 100 per page, via rel="next"


def test_incremental_diff_uses_compare(fake: FakeGitHub) -> None:
    first = fake.pulls[7].head
    fake.repo.write("src/added.py", "import os\n\nprint(os.getcwd())\nprint('more')\n")
    second = fake.repo.commit("push")
    fake.push(7, second)
    f = forge(fake)
    req = f.fetch()
    inc = f.fetch_incremental(first, req)
    assert inc is not None and [x.path for x in inc.files] == ["src/added.py"]
    added = inc.file("src/added.py")
    assert [ln.kind for ln in added.hunks[0].lines] == [" ", " ", " ", "+"]
    assert added.line_at(Side.NEW, 4).text == "print('more')"
    assert f.fetch_incremental(second, req).files == ()


def test_incremental_after_force_push_reviews_everything(fake: FakeGitHub) -> None:
    base = fake.pulls[7].base
    fake.repo.git("checkout", "-q", "-b", "other", base)
    fake.repo.write("other.txt", "x\n")
    elsewhere = fake.repo.commit("unrelated")
    f = forge(fake)
    assert f.fetch_incremental(elsewhere, f.fetch()) is None


def test_missing_pr_is_a_one_line_forge_error(fake: FakeGitHub) -> None:
    with pytest.raises(ForgeError) as err:
        forge(fake, number=99).fetch()
    assert err.value.status == 404 and "\n" not in str(err.value)
    assert err.value.exit_code == 2 and "check --repo and --pr" in str(err.value)


def test_bad_token_never_appears_in_the_error(fake: FakeGitHub) -> None:
    bad = "ghp_wrong_secret_value_123"
    s = settings(fake).__class__(github_url=fake.base_url, github_token=bad, retries=0)
    with pytest.raises(ForgeError) as err:
        GitHubForge(ForgeSettings.github(s), fake.full_name, 7, seconds_between_requests=0.0).fetch()
    assert err.value.status == 401
    assert bad not in str(err.value) and bad not in err.value.body
