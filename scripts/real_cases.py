"""Build the golden set of real changes, tests/eval/real/, from public repositories (SZZ).

    python scripts/real_cases.py --mirrors DIR [--per-repo 8] [--clean-per-repo 2] [--only REPO]

Each bug case is a change **as it was written**: a commit that a later, small fixing commit
repaired. The fixing commit's removed lines are blamed (`git blame -w -M` on its parent); when
they all lead to one earlier non-merge commit, that commit is the bug-introducing change, its
diff (`git diff -M B^ B`, 20–2,000 changed lines) is the case, and the golden comment sits on the
blamed lines in B's version of the file, with the fixing commit's message as its body.

A clean case is a commit of the same size whose added lines in source files were all still
attributed to it one year later (`git blame` at the last commit of that day): no later change,
fix or other, touched them for a year. Clean cases have no golden comments; their findings are
false positives (eval reports them per clean change).

Repositories are read from DIR/<owner>+<name>/repo (bare git directories, as the research
tool's `fetch` leaves them). Candidates are walked newest first and the choice is
deterministic for a given mirror. The licences are in tests/eval/real/sources.toml.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

REAL = Path(__file__).resolve().parents[1] / "tests" / "eval" / "real"
MIN_LINES, MAX_LINES = 20, 2000  # changed lines of a case's diff
MAX_FIX_LINES = 12  # a larger fix mixes the repair with other work: its blame is noise
MAX_BODY = 600
FIX = re.compile(r"(?<![-\w])(fix(es|ed)?|bug|crash(es)?|regression|broken|wrong|incorrect)(?![-\w])",
                 re.IGNORECASE)
NOT_A_FIX = re.compile(r"\b(typos?|javadoc|tense|wording|grammar|hyphen|versionchanged|docs?|"
                       r"documentation|changelog|readme|lint|ci|test(s|ing)?|spelling|comment|"
                       r"revert|merge|bump|deps?|format\w*|style|ruff|flake8|mypy|pylint|"
                       r"clippy|eslint|typing|types?|pep ?8|e\d{3}|whitespace|imports?|warnings?|"
                       r"build|release|version)\b", re.IGNORECASE)
TESTLIKE = re.compile(r"(^|/)(docs?|examples?|benchmarks?|scripts|tests?|testing|__tests__|spec|"
                      r"fixtures?|testdata|mocks?|locales?)(/|$)|(\.config\.[jt]s|_test\.go|"
                      r"_test\.py|\.test\.[jt]sx?|\.spec\.[jt]sx?|Test\.java)$")


@dataclass(frozen=True)
class Repo:
    name: str
    git: Path
    exts: tuple[str, ...]


def git(repo: Repo, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={repo.git}", *args], check=True,
                          capture_output=True, text=True, errors="replace").stdout


def is_source(repo: Repo, path: str) -> bool:
    return path.endswith(repo.exts) and not TESTLIKE.search(path)


def single_parent(repo: Repo, sha: str) -> bool:
    return len(git(repo, "rev-list", "--parents", "-n1", sha).split()) == 2


def commit_diff(repo: Repo, sha: str) -> str:
    return git(repo, "diff", "--no-color", "--no-ext-diff", "-M", f"{sha}^", sha)


def changed_lines(diff: str) -> int:
    try:
        return sum(f.added + f.removed for f in PatchSet(diff))
    except UnidiffParseError:  # a diff unidiff cannot read is no case
        return -1


def fixes(repo: Repo) -> list[tuple[str, str]]:
    """(sha, message) of the non-merge commits whose subject says they fix something."""
    out = []
    log = git(repo, "log", "--no-merges", "--format=%H%x00%B%x1e", "HEAD")
    for record in log.split("\x1e"):
        sha, _, message = record.strip().partition("\x00")
        subject = message.strip().splitlines()[0] if message.strip() else ""
        if sha and FIX.search(subject) and not NOT_A_FIX.search(subject):
            out.append((sha, message.strip()))
    return out


def removed_source_lines(repo: Repo, fix: str) -> dict[str, list[int]] | None:
    """Old-side line numbers the fix removed or changed in source files; None when the fix is
    too large, removes nothing, or touches no source file."""
    removed: dict[str, list[int]] = {}
    total = 0
    for file in PatchSet(git(repo, "diff", "--no-color", "-U0", f"{fix}^", fix)):
        if not is_source(repo, file.path):
            continue
        total += file.added + file.removed
        for hunk in file:
            removed.setdefault(file.source_file[2:], []).extend(
                line.source_line_no for line in hunk if line.is_removed and line.value.strip())
    if not removed or total > MAX_FIX_LINES or not any(removed.values()):
        return None
    return {p: n for p, n in removed.items() if n}


def blame(repo: Repo, rev: str, path: str, lines: list[int]) -> list[tuple[str, str, int]]:
    """(commit, its path, its line) of each line of `path` at `rev`."""
    args = [a for n in lines for a in ("-L", f"{n},{n}")]
    out = git(repo, "blame", "--porcelain", "-w", "-M", *args, rev, "--", path)
    result, names = [], {}
    current: list[str] = []
    for line in out.splitlines():
        head = line.split()
        if len(head) >= 3 and re.fullmatch(r"[0-9a-f]{40}", head[0]):
            current = [head[0], head[1]]
        elif line.startswith("filename "):
            names[current[0]] = line[len("filename "):]
        elif line.startswith("\t") and current:
            result.append((current[0], names.get(current[0], path), int(current[1])))
    return result


def ranges(lines: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def body_of(repo: Repo, fix: str, message: str) -> str:
    text = " ".join(message.split())
    return f"Fixed later by {repo.name}@{fix[:12]}: {text}"[:MAX_BODY]


def bug_cases(repo: Repo, limit: int, seen: set[str]) -> list[dict[str, object]]:
    cases: list[dict[str, object]] = []
    for fix, message in fixes(repo):
        if len(cases) >= limit:
            break
        if not single_parent(repo, fix):
            continue
        removed = removed_source_lines(repo, fix)
        if removed is None:
            continue
        blamed = [b for path, lines in removed.items() for b in blame(repo, f"{fix}^", path, lines)]
        origins = {sha for sha, _, _ in blamed}
        if len(origins) != 1:
            continue
        origin = origins.pop()
        if origin in seen or not single_parent(repo, origin):
            continue
        diff = commit_diff(repo, origin)
        size = changed_lines(diff)
        if not MIN_LINES <= size <= MAX_LINES:
            continue
        by_path: dict[str, list[int]] = {}
        for _, path, line in blamed:
            by_path.setdefault(path, []).append(line)
        if not _all_added(diff, by_path):
            continue
        seen.add(origin)
        body = body_of(repo, fix, message)
        comments = [{"path": path, "line": lo, **({"end_line": hi} if hi != lo else {}),
                     "side": "new", "body": body}
                    for path, lines in sorted(by_path.items()) for lo, hi in ranges(lines)]
        cases.append({"id": case_id(repo, origin), "diff": diff, "comments": comments,
                      "source": {"repo": repo.name, "commit": origin, "fixed_by": fix,
                                 "changed_lines": size}})
    return cases


def _all_added(diff: str, by_path: dict[str, list[int]]) -> bool:
    """Every golden line is an added line of the case's diff (blame can cross a rename the
    diff shows differently; such a case is left out)."""
    added = {(f.path, line.target_line_no) for f in PatchSet(diff) for h in f for line in h
             if line.is_added}
    return all((p, n) in added for p, lines in by_path.items() for n in lines)


def case_id(repo: Repo, sha: str) -> str:
    return f"{repo.name.split('/')[1].lower()}-{sha[:10]}"


def clean_cases(repo: Repo, limit: int, seen: set[str]) -> list[dict[str, object]]:
    """Commits whose added source lines were all still theirs a year later."""
    head_date = datetime.fromisoformat(git(repo, "log", "-1", "--format=%cI", "HEAD").strip())
    before = (head_date - timedelta(days=366)).isoformat()
    cases: list[dict[str, object]] = []
    log = git(repo, "log", "--no-merges", f"--until={before}", "--format=%H %cI", "HEAD")
    for entry in log.splitlines()[:400]:
        if len(cases) >= limit:
            break
        sha, date = entry.split()
        if sha in seen or FIX.search(git(repo, "log", "-1", "--format=%s", sha)):
            continue  # a fix is no clean change: it says something was wrong
        diff = commit_diff(repo, sha)
        size = changed_lines(diff)
        if not MIN_LINES <= size <= min(MAX_LINES, 400) or not single_parent(repo, sha):
            continue
        later = (datetime.fromisoformat(date) + timedelta(days=365)).isoformat()
        at = git(repo, "rev-list", "-n1", f"--until={later}", "HEAD").strip()
        if at and _untouched(repo, sha, diff, at):
            seen.add(sha)
            cases.append({"id": case_id(repo, sha) + "-clean", "diff": diff, "comments": [],
                          "source": {"repo": repo.name, "commit": sha, "clean_until": at,
                                     "changed_lines": size}})
    return cases


def _untouched(repo: Repo, sha: str, diff: str, at: str) -> bool:
    added: dict[str, int] = {}
    for f in PatchSet(diff):
        if is_source(repo, f.path) and f.added:
            added[f.path] = f.added
    if not added:
        return False
    for path, count in added.items():
        try:
            out = git(repo, "blame", "--porcelain", "-w", "-M", at, "--", path)
        except subprocess.CalledProcessError:
            return False  # the file is gone a year later: its lines were touched
        still = sum(1 for line in out.splitlines()
                    if re.match(rf"{sha} \d+ \d+", line))
        if still < count:
            return False
    return True


def write(case: dict[str, object]) -> None:
    folder = REAL / str(case["id"])
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "change.diff").write_text(str(case["diff"]), encoding="utf-8")
    (folder / "golden.json").write_text(json.dumps(
        {"id": case["id"], "comments": case["comments"], "source": case["source"]},
        indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--per-repo", type=int, default=8)
    parser.add_argument("--clean-per-repo", type=int, default=2)
    parser.add_argument("--only")
    args = parser.parse_args()
    sources = tomllib.loads((REAL / "sources.toml").read_text(encoding="utf-8"))
    for entry in sources["repo"]:
        if args.only and entry["name"] != args.only:
            continue
        folder = args.mirrors / entry["name"].replace("/", "+") / "repo"
        if not folder.is_dir():
            print(f"{entry['name']}: no mirror at {folder}", file=sys.stderr)
            return 2
        repo = Repo(entry["name"], folder, tuple(entry["extensions"]))
        seen: set[str] = set()
        made = bug_cases(repo, args.per_repo, seen) + clean_cases(repo, args.clean_per_repo, seen)
        for case in made:
            write(case)
        print(f"{entry['name']}: {sum(1 for c in made if c['comments'])} bug, "
              f"{sum(1 for c in made if not c['comments'])} clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
