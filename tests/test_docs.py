"""The docs point only inside the repository: no link out of it, no path of a developer's
machine, no link to a file that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
MACHINE = re.compile(r"(?<![\w.])(/work/|~/\.pyenv|/root/|/home/\w)")


def test_no_link_leaves_the_repository_or_misses_its_file() -> None:
    problems = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web page, or a heading of the same page
            path = (doc.parent / target.split("#", 1)[0]).resolve()
            if ROOT not in path.parents and path != ROOT or not path.exists():
                problems.append(f"{doc.relative_to(ROOT)}: {target}")
    assert problems == []


def test_no_path_of_a_developers_machine() -> None:
    found = [f"{doc.relative_to(ROOT)}: {m.group(0)}" for doc in DOCS
             for m in MACHINE.finditer(doc.read_text(encoding="utf-8"))]
    assert found == []


def test_every_test_the_docs_name_exists() -> None:
    """docs/security.md holds each boundary with the test that holds it: a renamed or removed
    test must not leave a boundary claimed by nothing."""
    named = re.compile(r"`(tests/[\w/]+\.py|…)::(\w+)`")
    missing = []
    for doc in DOCS:
        path = ""
        for file, name in named.findall(doc.read_text(encoding="utf-8")):
            path = path if file == "…" else file
            source = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else ""
            if not re.search(rf"^(async )?def {name}\(", source, re.MULTILINE):
                missing.append(f"{doc.relative_to(ROOT)}: {path}::{name}")
    assert missing == []


def test_every_table_starts_with_a_header_and_is_not_cut_by_a_paragraph() -> None:
    """A row after a paragraph starts a table of its own with no header, which renders as
    text: the first row of every table is followed by its |---| line."""
    broken = []
    for doc in [*DOCS, ROOT / "server" / "README.md"]:
        lines = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"),
                       doc.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL).splitlines()
        for i, line in enumerate(lines):
            starts = line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))
            if starts and not re.match(r"^\|\s*:?-", lines[i + 1] if i + 1 < len(lines) else ""):
                broken.append(f"{doc.relative_to(ROOT)}:{i + 1}: {line[:60]}")
    assert broken == []
