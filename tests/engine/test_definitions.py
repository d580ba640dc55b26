"""Definitions from other files: the names added lines call, found once per review with git
grep at the head, shown after the code around the hunks, without rows."""

from __future__ import annotations

import re

from reviewbot.engine.definitions import called_names, defined_in, git_finder
from tests.fake_openai import row_ranges
from tests.git_support import GitRepo, review_git

LIB = "def normalize(value):\n    if value is None:\n        return ''\n    return value.strip()\n" \
      "\n\ndef twice(x):\n    return 2 * x\n\n\ndef twice_again(x):\n    return 4 * x\n"


def test_names_are_the_calls_of_added_lines_minus_what_the_chunk_defines() -> None:
    added = ["    name = normalize(raw)", "    items.append(parse_item(x))", "    print(len(a))",
             "def parse_item(x):", "    return helper.convert(x) if x else None"]
    assert called_names(added, defined_in(added)) == ["convert", "normalize"]


def _repo(repo: GitRepo) -> None:
    repo.write("lib.py", LIB)
    repo.write("app.py", "from lib import normalize\n\n\ndef handle(raw):\n    return raw\n")
    repo.commit("base")
    repo.write("app.py", "from lib import normalize\n\n\ndef handle(raw):\n"
               "    return normalize(raw)\n")
    repo.commit("Normalize the input")


def test_git_grep_finds_the_definition_and_its_body(git_repo: GitRepo) -> None:
    _repo(git_repo)

    def read(path: str) -> list[str] | None:
        return (git_repo.root / path).read_text().split("\n")

    (d,) = git_finder("HEAD", str(git_repo.root))(["normalize", "missing_name"], read)
    assert (d.path, d.first, d.last) == ("lib.py", 1, 4) and d.lines[-1] == "    return value.strip()"


def test_a_git_review_shows_the_definition_a_change_calls(git_repo: GitRepo) -> None:
    _repo(git_repo)
    proc, (body,) = review_git(git_repo, "HEAD~1..HEAD", "--no-verify")
    assert proc.returncode == 0, proc.stderr
    user = body["messages"][1]["content"]
    assert "=== lib.py lines 1-4 (definition of normalize, head, not in the diff)\n" \
           "|def normalize(value):" in user
    shown_rows = {int(m) for m in re.findall(r"^[-+](\d+) ", user, re.MULTILINE)}
    assert {r for lo, hi in row_ranges(body) for r in range(lo, hi + 1)} == shown_rows


JAVA = ("package acme;\n\npublic class Store {\n    public static int scoreOf(String key) {\n"
        "        return key.length();\n    }\n}\n")
TS = "export const toSlug = (title: string): string =>\n  title.trim().toLowerCase();\n"
GO = "package store\n\nfunc (s *Store) Flush(force bool) error {\n\treturn nil\n}\n"
NOTES = "scoreOf(x) and toSlug(y) are mentioned here, and Flush(z), but not defined.\n"


def test_a_syntax_tree_finds_what_a_line_regexp_misses(git_repo: GitRepo) -> None:
    """Java methods, function-valued consts and Go methods by their grammar; a text file
    that only mentions the names gives nothing."""
    for path, text in [("src/Store.java", JAVA), ("web/slug.ts", TS), ("store/store.go", GO),
                       ("NOTES.txt", NOTES)]:
        git_repo.write(path, text)
    git_repo.commit("base")

    def read(path: str) -> list[str] | None:
        return (git_repo.root / path).read_text().split("\n")

    names = ["scoreOf", "toSlug", "Flush"]
    found = git_finder("HEAD", str(git_repo.root))(names, read)
    assert sorted((d.name, d.path, d.first, d.last) for d in found) == [
        ("Flush", "store/store.go", 3, 5), ("scoreOf", "src/Store.java", 4, 6),
        ("toSlug", "web/slug.ts", 1, 2)]
    by_regexp = git_finder("HEAD", str(git_repo.root), syntax=False)(names, read)
    assert [d.name for d in by_regexp] == ["Flush"]  # `func (s *Store) Flush(`
