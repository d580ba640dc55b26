"""The bot's calls to git (reviewbot.git) on a real repository: a range is never an option, the
diff's format does not follow the user's config, and the commit messages of the range."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.errors import DiffError
from reviewbot.git import commit_messages, from_git, is_revision, range_base
from tests.git_support import GitRepo


@pytest.mark.parametrize("text", ["--output=/tmp/x", "-p", "main ..HEAD", "a\nb", "a\x00b", ""])
def test_an_option_or_a_control_character_is_no_range(text: str) -> None:
    assert not is_revision(text)
    with pytest.raises(DiffError, match="--git needs a revision range"):
        from_git(text)


def test_the_diff_keeps_its_prefixes_and_names_whatever_the_users_config_says(
        git_repo: GitRepo) -> None:
    git_repo.write("docs/r\u00e9sum\u00e9.md", "one\n")
    base = git_repo.commit("base")
    git_repo.write("docs/r\u00e9sum\u00e9.md", "two\n")
    head = git_repo.commit("change")
    for key, value in (("diff.noprefix", "true"), ("core.quotePath", "true"),
                       ("diff.mnemonicPrefix", "true")):
        git_repo.git("config", key, value)
    out = from_git(f"{base}..{head}", cwd=str(git_repo.root)).decode()
    assert "--- a/docs/r\u00e9sum\u00e9.md\n+++ b/docs/r\u00e9sum\u00e9.md" in out


def test_an_unknown_revision_is_one_diff_error_naming_the_range(git_repo: GitRepo) -> None:
    git_repo.commit("base")
    with pytest.raises(DiffError, match="git diff nope..HEAD failed: "):
        from_git("nope..HEAD", cwd=str(git_repo.root))


def test_the_ranges_messages_oldest_first_and_none_for_a_single_revision(
        git_repo: GitRepo, tmp_path: Path) -> None:
    base = git_repo.commit("base")
    for n in range(3):
        git_repo.write("a.txt", f"{n}\n")
        git_repo.commit(f"step {n}\n\nwhy {n}")
    root = str(git_repo.root)
    assert commit_messages(f"{base}..HEAD", cwd=root) == ("step 0\n\nwhy 0", "step 1\n\nwhy 1",
                                                          "step 2\n\nwhy 2")
    assert commit_messages(f"{base}..HEAD", cwd=root, limit=1) == ("step 2\n\nwhy 2",)
    assert commit_messages("HEAD", cwd=root) == ()
    assert commit_messages(f"{base}..HEAD", cwd=str(tmp_path)) == ()  # not a repository
    assert range_base(f"{base}...HEAD") == base and range_base("HEAD") is None
    assert range_base("..HEAD") is None
