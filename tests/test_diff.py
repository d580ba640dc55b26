"""The diff model on real diffs made by git: every case of the engine issue's "Diff model".

Line numbers are never checked against numbers computed by the code under test: every DiffLine
is compared with the real file contents at the real revision (`git show REV:PATH`, split on
b"\\n" only, which is what diff line numbers count).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from reviewbot import diff, git
from reviewbot.diff import ChangeSet, DiffLine, FileDiff, Side
from reviewbot.engine import filters
from reviewbot.errors import DiffError
from tests.git_support import GitRepo

NEW, OLD = Side.NEW, Side.OLD


def numbered(n: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i}\n" for i in range(1, n + 1))


def only(changes: ChangeSet, path: str) -> FileDiff:
    found = [f for f in changes.files if path in (f.new_path, f.old_path)]
    assert len(found) == 1, [f.path for f in changes.files]
    return found[0]


def assert_matches_files(repo: GitRepo, base: str, head: str, file: FileDiff) -> None:
    """Every shown line is the real line at its (side, number); changed lines are complete."""
    old = repo.file_lines(base, file.old_path) if file.old_path else []
    new = repo.file_lines(head, file.new_path) if file.new_path else []
    for hunk in file.hunks:
        for line in hunk.lines:
            if line.old is not None:
                assert line.text == old[line.old - 1].decode("utf-8", "replace"), (line, "old")
            if line.new is not None:
                assert line.text == new[line.new - 1].decode("utf-8", "replace"), (line, "new")
            assert (line.kind == "+") == (line.old is None)
            assert (line.kind == "-") == (line.new is None)


def expected_commentable(raw: bytes, path: str) -> set[tuple[Side, int]]:
    """An independent reading of the raw diff text for one file: counters per hunk header."""
    out: set[tuple[Side, int]] = set()
    inside = False
    old = new = 0
    for text in raw.decode("utf-8", "replace").split("\n"):
        if text.startswith("diff --git "):
            inside = text.endswith(f" b/{path}")
            old = new = -1
            continue
        if not inside:
            continue
        if text.startswith("@@ "):
            ranges = text.split(" ")[1:3]
            old, new = int(ranges[0][1:].split(",")[0]), int(ranges[1][1:].split(",")[0])
        elif old < 0 or text.startswith(("---", "+++")) and old == new == -1:
            continue
        elif text.startswith("+"):
            out.add((NEW, new))
            new += 1
        elif text.startswith("-"):
            out.add((OLD, old))
            old += 1
        elif text.startswith(" "):
            out.update({(NEW, new), (OLD, old)})
            old += 1
            new += 1
    return out


# -- commentable positions -------------------------------------------------------------------

def test_commentable_positions_are_exact(git_repo: GitRepo) -> None:
    git_repo.write("app.py", "".join(f"a{i}\n" for i in range(1, 31)))
    base = git_repo.commit()
    lines = [f"a{i}\n" for i in range(1, 31)]
    lines[4] = "b5\n"  # line 5 changed
    del lines[24]  # line 25 removed
    git_repo.write("app.py", "".join(lines))
    head = git_repo.commit()
    file = only(diff.parse(git_repo.diff(base, head)), "app.py")

    assert [(h.old_start, h.old_len, h.new_start, h.new_len) for h in file.hunks] == [
        (2, 7, 2, 7), (22, 7, 22, 6)]
    new = set(range(2, 9)) | set(range(22, 28))
    old = set(range(2, 9)) | set(range(22, 29))
    assert file.commentable == {(NEW, n) for n in new} | {(OLD, n) for n in old}
    added = {p for h in file.hunks for l in h.lines if l.kind == "+" for p in l.positions()}
    removed = {p for h in file.hunks for l in h.lines if l.kind == "-" for p in l.positions()}
    context = {p for h in file.hunks for l in h.lines if l.kind == " " for p in l.positions()}
    assert added == {(NEW, 5)}
    assert removed == {(OLD, 5), (OLD, 25)}
    assert context == {(NEW, n) for n in new - {5}} | {(OLD, n) for n in old - {5, 25}}
    assert file.changed_lines == 3
    assert file.line_at(NEW, 5) == DiffLine("+", None, 5, "b5")
    assert file.line_at(OLD, 25) == DiffLine("-", 25, None, "a25")
    assert file.line_at(NEW, 25) == DiffLine(" ", 26, 25, "a26")
    assert file.line_at(NEW, 15) is None
    assert file.hunk_at(OLD, 28) is file.hunks[1]
    assert_matches_files(git_repo, base, head, file)


def test_commentable_matches_an_independent_reading_of_the_diff(git_repo: GitRepo) -> None:
    git_repo.write("m.py", numbered(200))
    base = git_repo.commit()
    lines = numbered(200).split("\n")[:-1]
    for i in (3, 40, 41, 42, 90, 150, 199):
        lines[i] = f"changed {i}"
    del lines[120:125]
    lines[60:60] = ["inserted a", "inserted b"]
    git_repo.write("m.py", "\n".join(lines) + "\n")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    file = only(diff.parse(raw), "m.py")
    assert file.commentable == expected_commentable(raw, "m.py")
    assert_matches_files(git_repo, base, head, file)


# -- renames ---------------------------------------------------------------------------------

def test_pure_rename_keeps_both_paths_and_has_nothing_to_anchor(git_repo: GitRepo) -> None:
    git_repo.write("src/old_name.py", numbered(30))
    base = git_repo.commit()
    git_repo.move("src/old_name.py", "lib/new_name.py")
    head = git_repo.commit()
    changes = diff.parse(git_repo.diff(base, head))
    assert len(changes.files) == 1
    file = changes.files[0]
    assert (file.old_path, file.new_path, file.path) == ("src/old_name.py", "lib/new_name.py",
                                                         "lib/new_name.py")
    assert file.status == "renamed"
    assert file.hunks == () and file.commentable == frozenset()
    assert changes.file("src/old_name.py") is file and changes.file("lib/new_name.py") is file


def test_rename_with_content_change_numbers_old_and_new_side_by_their_own_file(
        git_repo: GitRepo) -> None:
    git_repo.write("pkg/before.py", numbered(40))
    base = git_repo.commit()
    git_repo.move("pkg/before.py", "pkg/after.py")
    text = numbered(40).replace("line 20\n", "line twenty\nextra\n").replace("line 35\n", "")
    git_repo.write("pkg/after.py", text)
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    assert b"rename from pkg/before.py" in raw
    file = only(diff.parse(raw), "pkg/after.py")
    assert (file.old_path, file.new_path, file.status) == ("pkg/before.py", "pkg/after.py",
                                                           "renamed")
    assert file.changed_lines == 4
    assert (OLD, 20) in file.commentable and (NEW, 21) in file.commentable
    assert (OLD, 35) in file.commentable and (NEW, 35) in file.commentable
    assert_matches_files(git_repo, base, head, file)


# -- binary ----------------------------------------------------------------------------------

@pytest.mark.parametrize("binary_patch", [False, True], ids=["Binary-files-differ", "GIT-binary-patch"])
def test_binary_files_have_no_hunks_and_do_not_disturb_the_next_file(
        git_repo: GitRepo, binary_patch: bool) -> None:
    git_repo.write("assets/changed.png", bytes(range(256)) * 4)
    git_repo.write("assets/deleted.bin", b"\x00\x01\x02" * 300)
    git_repo.write("b_after.txt", numbered(10))
    base = git_repo.commit()
    git_repo.write("assets/changed.png", bytes(reversed(range(256))) * 4)
    git_repo.remove("assets/deleted.bin")
    git_repo.write("assets/added.bin", b"\xff\x00" * 500 + b"\n-- \n@@ -1 +1 @@\n")
    git_repo.write("b_after.txt", numbered(10).replace("line 5", "line five"))
    head = git_repo.commit()
    if binary_patch:
        raw = git_repo.diff(base, head)
        assert raw.count(b"GIT binary patch") == 3
    else:
        raw = git_repo.git("diff", "--no-color", base, head)
        assert raw.count(b"Binary files ") == 3 and b"GIT binary patch" not in raw
    changes = diff.parse(raw)
    assert sorted(f.path for f in changes.files) == [
        "assets/added.bin", "assets/changed.png", "assets/deleted.bin", "b_after.txt"]
    for path, status in (("assets/added.bin", "added"), ("assets/changed.png", "modified"),
                         ("assets/deleted.bin", "deleted")):
        file = only(changes, path)
        assert file.binary and file.hunks == () and file.commentable == frozenset()
        assert file.status == status
        assert _reason(file) == "binary file"
    text = only(changes, "b_after.txt")
    assert not text.binary
    assert text.commentable == {(NEW, n) for n in range(2, 9)} | {(OLD, n) for n in range(2, 9)}
    assert_matches_files(git_repo, base, head, text)


# -- modes, new, deleted, empty --------------------------------------------------------------

def test_mode_only_change(git_repo: GitRepo) -> None:
    git_repo.write("run.sh", "#!/bin/sh\necho hi\n", executable=False)
    git_repo.write("both.sh", "#!/bin/sh\necho a\n", executable=False)
    base = git_repo.commit()
    git_repo.chmod("run.sh", True)
    git_repo.write("both.sh", "#!/bin/sh\necho b\n", executable=True)
    head = git_repo.commit()
    changes = diff.parse(git_repo.diff(base, head))
    mode = only(changes, "run.sh")
    assert (mode.old_path, mode.new_path) == ("run.sh", "run.sh")
    assert (mode.old_mode, mode.new_mode) == ("100644", "100755")
    assert mode.status == "mode-changed" and mode.hunks == () and mode.commentable == frozenset()
    both = only(changes, "both.sh")
    assert (both.old_mode, both.new_mode) == ("100644", "100755")
    assert both.status == "modified"
    assert both.commentable == {(NEW, 1), (OLD, 1), (NEW, 2), (OLD, 2)}
    assert_matches_files(git_repo, base, head, both)


def test_new_and_deleted_files(git_repo: GitRepo) -> None:
    git_repo.write("gone.py", numbered(5, "old"))
    base = git_repo.commit()
    git_repo.remove("gone.py")
    git_repo.write("fresh.py", numbered(4, "new"))
    head = git_repo.commit()
    changes = diff.parse(git_repo.diff(base, head))
    fresh, gone = only(changes, "fresh.py"), only(changes, "gone.py")
    assert (fresh.old_path, fresh.new_path, fresh.status) == (None, "fresh.py", "added")
    assert fresh.commentable == {(NEW, n) for n in range(1, 5)}
    assert (gone.old_path, gone.new_path, gone.status, gone.path) == ("gone.py", None, "deleted",
                                                                      "gone.py")
    assert gone.commentable == {(OLD, n) for n in range(1, 6)}
    for file in (fresh, gone):
        assert_matches_files(git_repo, base, head, file)


def test_empty_files_added_and_deleted(git_repo: GitRepo) -> None:
    git_repo.write("keep.txt", "k\n")
    base = git_repo.commit()
    git_repo.write("new_empty.txt", "")
    middle = git_repo.commit()
    git_repo.remove("new_empty.txt")
    head = git_repo.commit()
    added = only(diff.parse(git_repo.diff(base, middle)), "new_empty.txt")
    deleted = only(diff.parse(git_repo.diff(middle, head)), "new_empty.txt")
    assert (added.old_path, added.new_path, added.status) == (None, "new_empty.txt", "added")
    assert (added.old_mode, added.new_mode) == (None, "100644")
    assert (deleted.old_path, deleted.new_path, deleted.status) == ("new_empty.txt", None,
                                                                    "deleted")
    assert (deleted.old_mode, deleted.new_mode) == ("100644", None)
    for file in (added, deleted):
        assert file.hunks == () and file.commentable == frozenset() and file.changed_lines == 0
        assert _reason(file) == "no changed lines (empty file)"


def test_existing_empty_file_that_gets_content_is_modified_not_added(git_repo: GitRepo) -> None:
    # git prints "@@ -0,0 +1,2 @@" with no "new file mode": the file existed (empty) before
    git_repo.write("notes.txt", "")
    base = git_repo.commit()
    git_repo.write("notes.txt", "now\nfull\n")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    assert b"new file mode" not in raw and b"--- a/notes.txt" in raw
    file = only(diff.parse(raw), "notes.txt")
    assert file.commentable == {(NEW, 1), (NEW, 2)}
    assert (file.old_path, file.new_path) == ("notes.txt", "notes.txt")
    assert file.status == "modified"


def test_file_emptied_but_kept_is_modified_not_deleted(git_repo: GitRepo) -> None:
    # git prints "@@ -1,2 +0,0 @@" with no "deleted file mode": the file still exists (empty)
    git_repo.write("config.ini", "x = 1\ny = 2\n")
    base = git_repo.commit()
    git_repo.write("config.ini", "")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    assert b"deleted file mode" not in raw and b"+++ b/config.ini" in raw
    file = only(diff.parse(raw), "config.ini")
    assert file.commentable == {(OLD, 1), (OLD, 2)}
    assert (file.old_path, file.new_path) == ("config.ini", "config.ini")
    assert file.status == "modified"


# -- line endings and odd characters ---------------------------------------------------------

def test_no_newline_at_end_of_file_on_either_side(git_repo: GitRepo) -> None:
    git_repo.write("old_side.txt", "a\nb\nc")
    git_repo.write("new_side.txt", "a\nb\nc\n")
    git_repo.write("both.txt", "a\nb")
    base = git_repo.commit()
    git_repo.write("old_side.txt", "a\nb\nc\n")
    git_repo.write("new_side.txt", "a\nb\nC")
    git_repo.write("both.txt", "a\nB")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    assert raw.count(b"\\ No newline at end of file") == 4
    changes = diff.parse(raw)
    for path in ("old_side.txt", "new_side.txt", "both.txt"):
        file = only(changes, path)
        assert all(not l.text.startswith("\\") and "No newline" not in l.text
                   for h in file.hunks for l in h.lines)
        assert file.commentable == expected_commentable(raw, path)
        assert_matches_files(git_repo, base, head, file)
    assert only(changes, "old_side.txt").commentable == {
        (NEW, 1), (OLD, 1), (NEW, 2), (OLD, 2), (OLD, 3), (NEW, 3)}
    assert only(changes, "both.txt").changed_lines == 2


def test_crlf_and_lone_carriage_returns_keep_line_numbers(git_repo: GitRepo) -> None:
    before = b"".join(b"row %d\r\n" % i for i in range(1, 21))
    git_repo.write("dos.txt", before)
    git_repo.write("mac.txt", b"start\nhas\ra lone cr\nmiddle\nend\rwith\rmany\n" + numbered(10).encode())
    base = git_repo.commit()
    after = before.replace(b"row 5\r\n", b"row 5 has\rinner cr\r\n").replace(
        b"row 15\r\n", b"\r\n\r\nrow 15b\r\n")
    git_repo.write("dos.txt", after)
    git_repo.write("mac.txt", b"start\nhas\ra lone cr\nMIDDLE\rX\nend\rwith\rmany\n" + numbered(10).encode())
    head = git_repo.commit()
    changes = diff.parse(git_repo.diff(base, head))
    dos = only(changes, "dos.txt")
    assert_matches_files(git_repo, base, head, dos)
    assert dos.line_at(NEW, 5) == DiffLine("+", None, 5, "row 5 has\rinner cr\r")
    assert dos.line_at(NEW, 17) == DiffLine("+", None, 17, "row 15b\r")
    assert dos.line_at(NEW, 18) == DiffLine(" ", 16, 18, "row 16\r")
    mac = only(changes, "mac.txt")
    assert_matches_files(git_repo, base, head, mac)
    assert mac.line_at(NEW, 3) == DiffLine("+", None, 3, "MIDDLE\rX")
    assert mac.line_at(OLD, 4) == DiffLine(" ", 4, 4, "end\rwith\rmany")
    assert mac.line_at(NEW, 5) == DiffLine(" ", 5, 5, "line 1")


def test_unicode_line_separators_inside_lines_are_not_line_breaks(git_repo: GitRepo) -> None:
    odd = ["form\x0cfeed", "vertical\x0btab", "ls\u2028sep", "ps\u2029sep", "nel\x85x",
           "fs\x1cgs\x1drs\x1e", "plain"]
    git_repo.write("odd.txt", "\n".join(odd) + "\n")
    base = git_repo.commit()
    git_repo.write("odd.txt", "\n".join(s.upper() if i % 2 else s for i, s in enumerate(odd)) + "\n")
    head = git_repo.commit()
    file = only(diff.parse(git_repo.diff(base, head)), "odd.txt")
    assert_matches_files(git_repo, base, head, file)
    assert file.line_at(NEW, 7) == DiffLine(" ", 7, 7, "plain")
    assert file.line_at(NEW, 3) == DiffLine(" ", 3, 3, "ls\u2028sep")
    assert file.line_at(NEW, 4) == DiffLine("+", None, 4, "PS\u2029SEP")
    assert max(n for _, n in file.commentable) == 7


def test_non_utf8_bytes_are_replaced_not_dropped(git_repo: GitRepo) -> None:
    latin = "café\nnaïve\nend\n".encode("latin-1")
    git_repo.write("legacy.txt", latin + b"\xff\xfe binary-ish \x80\n" + numbered(5).encode())
    git_repo.write("utf8.txt", "ok\n")
    base = git_repo.commit()
    git_repo.write("legacy.txt", latin.replace(b"end", b"fin \xe9t\xe9") + b"\xff\xfe binary-ish \x80\n"
                   + numbered(5).encode())
    git_repo.write("utf8.txt", "ok ✓\n")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    changes = diff.parse(raw)
    legacy = only(changes, "legacy.txt")
    assert_matches_files(git_repo, base, head, legacy)
    assert legacy.line_at(NEW, 3) == DiffLine("+", None, 3, "fin \ufffdt\ufffd")
    assert legacy.line_at(OLD, 4) == DiffLine(" ", 4, 4, "\ufffd\ufffd binary-ish \ufffd")
    assert only(changes, "utf8.txt").line_at(NEW, 1) == DiffLine("+", None, 1, "ok ✓")


# -- paths -----------------------------------------------------------------------------------

ODD_NAMES = ["café/naïve.py", "with space.py", 'has "quotes".py', "back\\slash.py", "tab\tname.py",
             "日本語.txt"]


@pytest.mark.parametrize("quote_path", [True, False], ids=["quotePath=true", "quotePath=false"])
def test_quoted_paths_are_unquoted(git_repo: GitRepo, quote_path: bool) -> None:
    for name in ODD_NAMES:
        git_repo.write(name, numbered(5))
    git_repo.write("ren ame/ünï.txt", numbered(20))
    git_repo.write("môde.sh", "x\n", executable=False)
    git_repo.write("bïn ary.bin", bytes(range(256)))
    base = git_repo.commit()
    for name in ODD_NAMES:
        git_repo.write(name, numbered(5).replace("line 3", "line three"))
    git_repo.move("ren ame/ünï.txt", 'ré named/"q" ü.txt')
    git_repo.chmod("môde.sh", True)
    git_repo.write("bïn ary.bin", bytes(reversed(range(256))))
    head = git_repo.commit()
    raw = git_repo.diff(base, head, quote_path=quote_path)
    if quote_path:
        assert b'"a/caf\\303\\251/na\\303\\257ve.py"' in raw
    assert b'"a/has \\"quotes\\".py"' in raw and b'"a/tab\\tname.py"' in raw
    changes = diff.parse(raw)
    assert sorted(f.path for f in changes.files) == sorted(
        ODD_NAMES + ['ré named/"q" ü.txt', "môde.sh", "bïn ary.bin"])
    for name in ODD_NAMES:
        file = only(changes, name)
        assert (file.old_path, file.new_path) == (name, name)
        assert file.commentable == {(s, n) for n in range(1, 6) for s in (NEW, OLD)}
        assert_matches_files(git_repo, base, head, file)
    renamed = only(changes, 'ré named/"q" ü.txt')
    assert (renamed.old_path, renamed.status) == ("ren ame/ünï.txt", "renamed")
    assert only(changes, "môde.sh").status == "mode-changed"
    assert only(changes, "bïn ary.bin").binary


def test_quote_path_setting_does_not_change_the_parsed_diff(git_repo: GitRepo) -> None:
    for name in ODD_NAMES:
        git_repo.write(name, numbered(8))
    base = git_repo.commit()
    for name in ODD_NAMES:
        git_repo.write(name, numbered(8).replace("line 6", "six"))
    head = git_repo.commit()
    quoted = diff.parse(git_repo.diff(base, head, quote_path=True))
    plain = diff.parse(git_repo.diff(base, head, quote_path=False))
    assert quoted == plain


@pytest.mark.parametrize("args,prefixes", [((), (b"i/", b"w/")), (("HEAD",), (b"c/", b"w/")),
                                           (("--cached",), (b"c/", b"i/"))])
def test_a_saved_diff_with_mnemonic_prefixes(git_repo: GitRepo, args: tuple[str, ...],
                                             prefixes: tuple[bytes, bytes]) -> None:
    """`git diff > change.diff` by a user with diff.mnemonicPrefix=true, then `--diff change.diff`."""
    git_repo.write("app.py", numbered(5))
    git_repo.write("tool.sh", "echo\n", executable=False)
    git_repo.commit()
    git_repo.write("app.py", numbered(5).replace("line 3", "three"))
    git_repo.chmod("tool.sh", True)
    if "--cached" in args:
        git_repo.git("add", "-A")
    raw = git_repo.git("diff", *args, config=("diff.mnemonicPrefix=true",))
    assert b"diff --git " + prefixes[0] + b"app.py " + prefixes[1] + b"app.py" in raw
    changes = diff.parse(raw)
    assert [(f.old_path, f.new_path, f.status) for f in changes.files] == [
        ("app.py", "app.py", "modified"), ("tool.sh", "tool.sh", "mode-changed")]


# -- submodules ------------------------------------------------------------------------------

def test_submodule_added_and_updated(make_repo: Callable[[str], GitRepo]) -> None:
    lib = make_repo("lib")
    lib.write("lib.c", "int x;\n")
    first = lib.commit("lib 1")
    lib.write("lib.c", "int y;\n")
    second = lib.commit("lib 2")
    app = make_repo("app")
    app.write("main.c", "int main(void) { return 0; }\n")
    base = app.commit("app")
    app.git("submodule", "add", "-q", str(lib.root), "deps/lib",
            config=("protocol.file.allow=always",))
    app.git("-C", "deps/lib", "checkout", "-q", first)
    added = app.commit("add lib")
    app.git("-C", "deps/lib", "checkout", "-q", second)
    updated = app.commit("bump lib")

    changes = diff.parse(app.diff(base, added))
    sub = only(changes, "deps/lib")
    assert sub.submodule and sub.status == "added" and sub.new_mode == "160000"
    assert sub.hunks[0].lines == (DiffLine("+", None, 1, f"Subproject commit {first}"),)
    assert _reason(sub) == "submodule"
    assert not only(changes, ".gitmodules").submodule

    bump = only(diff.parse(app.diff(added, updated)), "deps/lib")
    assert bump.submodule and bump.status == "modified"
    assert [l.text for l in bump.hunks[0].lines] == [
        f"Subproject commit {first}", f"Subproject commit {second}"]
    assert _reason(bump) == "submodule"


# -- size ------------------------------------------------------------------------------------

def test_a_single_900_kb_line_parses_and_is_reported_as_minified(git_repo: GitRepo) -> None:
    git_repo.write("small.py", "x = 1\n")
    base = git_repo.commit()
    line = "var a=" + ",".join(f"v{i % 997}" for i in range(200_000))
    line = line[:900_000]
    git_repo.write("dist/bundle.js", line + "\n")
    git_repo.write("small.py", "x = 2\n")
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    assert len(raw) > 900_000
    changes = diff.parse(raw)
    bundle = only(changes, "dist/bundle.js")
    assert bundle.hunks[0].lines == (DiffLine("+", None, 1, line),)
    assert bundle.commentable == {(NEW, 1)}
    reason = _reason(bundle)
    assert reason is not None and "minified" in reason and "900,000" in reason
    reviewed, skipped = filters.split(changes)
    assert [f.path for f in reviewed.files] == ["small.py"]
    assert [(s.path, s.reason) for s in skipped] == [("dist/bundle.js", reason)]


# -- format-patch ----------------------------------------------------------------------------

def test_format_patch_output_parses_like_the_diff(git_repo: GitRepo) -> None:
    git_repo.write("core.py", numbered(30))
    git_repo.write("img.bin", bytes(range(256)))
    base = git_repo.commit("base")
    git_repo.write("core.py", numbered(30).replace("line 10", "line ten").replace("line 29\n", ""))
    git_repo.write("added.py", "print('hi')\n")
    git_repo.write("img.bin", bytes(reversed(range(256))))
    git_repo.move("img.bin", "assets/img.bin")
    git_repo.write("nonl.txt", "no newline")
    head = git_repo.commit("Fix the thing\n\nA body line.\n-- not a signature\n+ not an addition\n")
    patch = git_repo.format_patch(base, head)
    text = patch.decode()
    assert text.startswith("From ") and "Subject: [PATCH] Fix the thing" in text
    assert text.rstrip("\n").split("\n")[-2] == "-- "  # the signature
    from_patch = diff.parse(patch)
    from_diff = diff.parse(git_repo.diff(base, head))
    assert from_patch == from_diff
    assert sorted(f.path for f in from_patch.files) == [
        "added.py", "assets/img.bin", "core.py", "img.bin", "nonl.txt"]
    core = only(from_patch, "core.py")
    assert core.changed_lines == 3
    assert_matches_files(git_repo, base, head, core)


def test_format_patch_series_keeps_every_commit(git_repo: GitRepo) -> None:
    git_repo.write("one.py", numbered(5))
    base = git_repo.commit("base")
    git_repo.write("one.py", numbered(5).replace("line 2", "two"))
    git_repo.commit("first\n\n- a bullet list\n+ with plus\n---\n-- \n")
    git_repo.write("two.py", "new\n")
    head = git_repo.commit("second\n\n- fixed the thing\n- and another\n+1 from review\n")
    patch = git_repo.format_patch(base, head)
    assert patch.decode().count("Subject: [PATCH ") == 2
    changes = diff.parse(patch)
    assert [f.path for f in changes.files] == ["one.py", "two.py"]
    assert changes.changed_lines == 3


@pytest.mark.parametrize("last", ["mode-only", "pure-rename", "empty-new-file"])
def test_format_patch_whose_last_file_has_no_hunks(git_repo: GitRepo, last: str) -> None:
    """The signature ("-- ", version) follows a hunk-less entry directly: it is not a hunk line."""
    git_repo.write("a.py", numbered(5))
    git_repo.write("z_tool.sh", "echo\n", executable=False)
    git_repo.write("z_old.txt", numbered(20))
    base = git_repo.commit("base")
    git_repo.write("a.py", numbered(5).replace("line 3", "three"))
    if last == "mode-only":
        git_repo.chmod("z_tool.sh", True)
    elif last == "pure-rename":
        git_repo.move("z_old.txt", "zz_new.txt")
    else:
        git_repo.write("zzz_empty.txt", "")
    head = git_repo.commit("change")
    patch = git_repo.format_patch(base, head)
    assert patch.rstrip(b"\n").rsplit(b"\n", 2)[-2] == b"-- "  # the signature
    changes = diff.parse(patch)
    assert changes == diff.parse(git_repo.diff(base, head))
    status = {"mode-only": "mode-changed", "pure-rename": "renamed", "empty-new-file": "added"}
    assert [f.status for f in changes.files] == ["modified", status[last]]


def test_format_patch_series_with_a_hunkless_file_between_commits(git_repo: GitRepo) -> None:
    """Commit messages of a series (bullet lists, "---") follow the previous patch's last file."""
    git_repo.write("one.py", numbered(5))
    git_repo.write("tool.sh", "echo\n", executable=False)
    base = git_repo.commit("base")
    git_repo.write("one.py", numbered(5).replace("line 2", "two"))
    git_repo.chmod("tool.sh", True)
    git_repo.commit("make the tool executable")
    git_repo.write("two.py", "new\n")
    head = git_repo.commit("second\n\n- fixed the thing\n- and another\n+1 from review\n")
    changes = diff.parse(git_repo.format_patch(base, head))
    assert [(f.path, f.status) for f in changes.files] == [
        ("one.py", "modified"), ("tool.sh", "mode-changed"), ("two.py", "added")]


# -- git RANGE -------------------------------------------------------------------------------

def test_from_git_range_is_the_diff_of_the_range(git_repo: GitRepo) -> None:
    git_repo.write("a.py", numbered(10))
    git_repo.write("b.py", numbered(10, "b"))
    base = git_repo.commit()
    git_repo.write("a.py", numbered(10).replace("line 4", "four"))
    git_repo.move("b.py", "moved/b.py")
    git_repo.write("é.txt", "x\n")
    head = git_repo.commit()
    raw = git.from_git(f"{base}..{head}", cwd=str(git_repo.root))
    assert raw == git_repo.diff(base, head)
    changes = diff.parse(raw)
    assert sorted(f.path for f in changes.files) == ["a.py", "moved/b.py", "é.txt"]
    assert only(changes, "moved/b.py").old_path == "b.py"
    assert diff.parse(git.from_git("HEAD~1", cwd=str(git_repo.root))) == changes


def test_from_git_errors_are_diff_errors(git_repo: GitRepo, tmp_path_factory: pytest.TempPathFactory) -> None:
    git_repo.write("a.py", "x\n")
    git_repo.commit()
    with pytest.raises(DiffError, match="no-such-branch"):
        git.from_git("no-such-branch..HEAD", cwd=str(git_repo.root))
    outside = tmp_path_factory.mktemp("not_a_repo")
    with pytest.raises(DiffError):
        git.from_git("HEAD~1..HEAD", cwd=str(outside))
    with pytest.raises(DiffError, match="empty"):  # an empty range is an empty diff
        diff.parse(git.from_git("HEAD..HEAD", cwd=str(git_repo.root)))


def _configured_repo(git_repo: GitRepo, key: str, value: str) -> tuple[str, str]:
    git_repo.write("a/inner.py", numbered(5))
    git_repo.write("plain.py", numbered(5))
    git_repo.write("old name.txt", numbered(20))
    base = git_repo.commit()
    git_repo.write("a/inner.py", numbered(5).replace("line 1", "one"))
    git_repo.write("plain.py", numbered(5).replace("line 5", "five"))
    git_repo.move("old name.txt", 'new "name".txt')
    head = git_repo.commit()
    git_repo.git("config", key, value)
    return base, head


@pytest.mark.parametrize("key,value", [("diff.noprefix", "true"), ("diff.mnemonicPrefix", "true"),
                                       ("diff.relative", "true"), ("color.ui", "always"),
                                       ("diff.renames", "false"), ("diff.external", "false")])
def test_from_git_range_ignores_the_users_diff_settings(git_repo: GitRepo, key: str, value: str) -> None:
    """`--git RANGE` runs in the user's repository, with the user's git config."""
    base, head = _configured_repo(git_repo, key, value)
    changes = diff.parse(git.from_git(f"{base}..{head}", cwd=str(git_repo.root)))
    assert sorted((f.old_path or "", f.new_path or "") for f in changes.files) == [
        ("a/inner.py", "a/inner.py"), ("old name.txt", 'new "name".txt'), ("plain.py", "plain.py")]


def test_from_git_in_a_subdirectory_with_diff_relative(git_repo: GitRepo) -> None:
    # `reviewbot review --git RANGE` run from a subdirectory: diff.relative=true would drop the
    # files outside it and shorten the paths of the others
    git_repo.write("sub/a.py", numbered(3))
    git_repo.write("top.py", numbered(3))
    base = git_repo.commit()
    git_repo.write("sub/a.py", numbered(3).replace("line 2", "two"))
    git_repo.write("top.py", numbered(3).replace("line 2", "two"))
    head = git_repo.commit()
    git_repo.git("config", "diff.relative", "true")
    changes = diff.parse(git.from_git(f"{base}..{head}", cwd=str(git_repo.root / "sub")))
    assert sorted(f.path for f in changes.files) == ["sub/a.py", "top.py"]


def test_from_git_against_the_work_tree_with_mnemonic_prefixes(git_repo: GitRepo) -> None:
    # diff.mnemonicPrefix makes `git diff HEAD` print "c/" and "w/" instead of "a/" and "b/"
    git_repo.write("app.py", numbered(5))
    git_repo.commit()
    git_repo.git("config", "diff.mnemonicPrefix", "true")
    git_repo.write("app.py", numbered(5).replace("line 3", "three"))
    changes = diff.parse(git.from_git("HEAD", cwd=str(git_repo.root)))
    assert [(f.old_path, f.new_path, f.status) for f in changes.files] == [
        ("app.py", "app.py", "modified")]


def test_from_git_reports_submodules_even_with_diff_submodule_log(
        make_repo: Callable[[str], GitRepo]) -> None:
    # diff.submodule=log replaces the "Subproject commit" diff with a commit log: the submodule
    # must still be in the ChangeSet, so that the filters can report it as skipped
    lib = make_repo("lib")
    lib.write("lib.c", "int x;\n")
    lib.commit()
    app = make_repo("app")
    app.write("main.c", "int main(void) { return 0; }\n")
    base = app.commit()
    app.git("submodule", "add", "-q", str(lib.root), "deps/lib",
            config=("protocol.file.allow=always",))
    head = app.commit()
    app.git("config", "diff.submodule", "log")
    changes = diff.parse(git.from_git(f"{base}..{head}", cwd=str(app.root)))
    assert sorted(f.path for f in changes.files) == [".gitmodules", "deps/lib"]
    _, skipped = filters.split(changes)
    assert [(s.path, s.reason) for s in skipped] == [("deps/lib", "submodule")]


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [b"", "", "   \n\t\n", b"\n\n"])
def test_empty_input_is_a_diff_error(raw: bytes | str) -> None:
    with pytest.raises(DiffError, match="empty"):
        diff.parse(raw)


@pytest.mark.parametrize("raw", [
    b"hello world\n",
    b"def f():\n    return 1\n",
    b'{"not": "a diff"}\n',
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    b"@@ -1 +1 @@\n-a\n+b\n",  # a hunk with no file header
])
def test_not_a_diff_is_a_diff_error(raw: bytes) -> None:
    with pytest.raises(DiffError):
        diff.parse(raw)


def test_truncated_and_corrupt_hunks_are_diff_errors(git_repo: GitRepo) -> None:
    git_repo.write("f.py", numbered(20))
    base = git_repo.commit()
    git_repo.write("f.py", numbered(20).replace("line 10", "ten"))
    head = git_repo.commit()
    raw = git_repo.diff(base, head)
    lines = raw.split(b"\n")
    with pytest.raises(DiffError):
        diff.parse(b"\n".join(lines[:-4]) + b"\n")  # hunk shorter than its header says
    with pytest.raises(DiffError):
        diff.parse(raw.replace(b"\n line 8\n", b"\n?line 8\n"))  # not a diff line


def test_hunk_longer_than_its_header_says_is_an_error_not_silently_cut(git_repo: GitRepo) -> None:
    # a hand-edited patch whose header undercounts: the lines past the count are changed lines
    # ("-line 10", "+ten") and must not vanish from the review without a word
    git_repo.write("f.py", numbered(20))
    base = git_repo.commit()
    git_repo.write("f.py", numbered(20).replace("line 10", "ten"))
    head = git_repo.commit()
    raw = git_repo.diff(base, head).replace(b"@@ -7,7 +7,7 @@", b"@@ -7,3 +7,3 @@")
    try:
        changes = diff.parse(raw)
    except DiffError:
        return
    assert changes.changed_lines == 2, "changed lines after the hunk's count were dropped"


def test_git_is_not_installed(monkeypatch: pytest.MonkeyPatch,
                              tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("empty_path")))
    with pytest.raises(DiffError, match="git is not installed"):
        git.from_git("HEAD")


def test_git_diff_subprocess_sanity(git_repo: GitRepo) -> None:
    """The fixture is real git: guard against a silently empty diff making other tests vacuous."""
    git_repo.write("x.txt", "1\n")
    base = git_repo.commit()
    git_repo.write("x.txt", "2\n")
    head = git_repo.commit()
    out = subprocess.run(["git", "diff", base, head], cwd=git_repo.root, capture_output=True,
                         check=True).stdout
    assert out == git_repo.diff(base, head) and b"+2\n" in out


def _reason(file: FileDiff, exclude: tuple[str, ...] = ()) -> str | None:
    skipped = filters.skip(file, exclude)
    return skipped.reason if skipped else None
