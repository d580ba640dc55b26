"""GitLab's per-file diff objects as FileDiffs (reviewbot.forges.gitlab.diffs), pure: GitLab's
own paths and modes kept, what it left out reported with the reason, a diff that does not
parse skipped with its name, never dropped silently."""

from __future__ import annotations

from reviewbot.diff import Side
from reviewbot.forges.gitlab.diffs import convert, file_diff, missing_reason

HUNK = "@@ -1,2 +1,2 @@\n keep\n-old\n+new"


def _obj(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"old_path": "a.py", "new_path": "a.py", "diff": HUNK,
                               "a_mode": "100644", "b_mode": "100644"}
    return {**base, **kw}


def test_a_modified_renamed_added_and_deleted_file_keep_gitlabs_paths() -> None:
    modified = file_diff(_obj())
    assert modified.path == "a.py" and (Side.NEW, 2) in modified.commentable
    renamed = file_diff(_obj(old_path="old/a.py", new_path="new/a.py", renamed_file=True))
    assert (renamed.old_path, renamed.new_path) == ("old/a.py", "new/a.py")
    added = file_diff(_obj(new_file=True, diff="@@ -0,0 +1 @@\n+hi"))
    assert added.old_path is None and added.status == "added"
    deleted = file_diff(_obj(deleted_file=True, diff="@@ -1 +0,0 @@\n-bye"))
    assert deleted.new_path is None and (Side.OLD, 1) in deleted.commentable


def test_binary_and_submodule_entries_have_no_lines_and_say_what_they_are() -> None:
    binary = file_diff(_obj(diff="Binary files a/x.png and b/x.png differ\n"))
    assert binary.binary and not binary.hunks
    submodule = file_diff(_obj(diff="", a_mode="160000", b_mode="160000"))
    assert submodule.submodule


def test_what_gitlab_left_out_and_what_does_not_parse_are_reported_apart() -> None:
    too_large = _obj(new_path="big.sql", old_path="big.sql", diff="", too_large=True)
    collapsed = _obj(new_path="gen.js", old_path="gen.js", diff="", collapsed=True)
    broken = _obj(new_path="odd.py", old_path="odd.py", diff="@@ -1,5 +1,5 @@\n-a")
    files, missing, skipped = convert([_obj(), too_large, collapsed, broken])
    assert [f.path for f in files] == ["a.py"]
    assert [missing_reason(d) for d in missing] == [
        "GitLab did not return the diff: the file is too large",
        "GitLab collapsed the diff of this file (too many changed lines)"]
    assert [s.path for s in skipped] == ["odd.py"]
    assert "GitLab's diff of odd.py could not be parsed" in skipped[0].reason
