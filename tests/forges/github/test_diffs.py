"""GitHub's file list and compare entries as one unified diff (reviewbot.forges.github.diffs);
the whole fetch paths run against the fake in test_fetch.py."""

from __future__ import annotations

from reviewbot.diff import Side, parse
from reviewbot.forges.github.diffs import FileEntry, files_to_diff


def test_files_to_diff_covers_every_status() -> None:
    entries = [
        FileEntry("src/a.py", "modified", "@@ -1,2 +1,2 @@\n x\n-y\n+z", changes=2),
        FileEntry("src/b.py", "renamed", "@@ -1 +1 @@\n-q\n+r", "src/old_b.py", 2),
        FileEntry("src/c.py", "renamed", None, "src/old_c.py", 0),  # pure rename
        FileEntry("gone.txt", "removed", "@@ -1 +0,0 @@\n-bye", changes=1),
        FileEntry("new.txt", "added", "@@ -0,0 +1 @@\n+hi", changes=1),
        FileEntry("img.png", "modified", None, changes=0),  # binary: GitHub sends no patch
    ]
    text, skipped = files_to_diff(entries)
    changes = parse(text)
    status = {f.path: f.status for f in changes.files}
    assert status == {"src/a.py": "modified", "src/b.py": "renamed", "src/c.py": "renamed",
                      "gone.txt": "deleted", "new.txt": "added", "img.png": "modified"}
    assert changes.file("src/b.py").old_path == "src/old_b.py"
    assert changes.file("img.png").binary and [s.path for s in skipped] == ["img.png"]
    assert (Side.OLD, 1) in changes.file("gone.txt").commentable
