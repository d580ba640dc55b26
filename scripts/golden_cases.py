"""Build the golden cases of tests/eval/planted/sources.toml from the public repositories.

    python scripts/golden_cases.py [--mirrors DIR] [--only ID]

Each case is `git diff <commit> <commit>^ -- <path>` (the fix run backwards: the diff brings the
bug back) and a golden comment on the line of that diff that holds `needle`, on `side`. A
repository is read from DIR/<owner>+<name>/repo when that is a git directory, else cloned bare
from GitHub into a temporary folder. A needle that is not found, or found twice, stops the run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from unidiff import PatchSet

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "eval" / "planted"


def git_dir(repo: str, mirrors: Path | None, scratch: Path) -> Path:
    mirror = mirrors / repo.replace("/", "+") / "repo" if mirrors else None
    if mirror is not None and mirror.is_dir():
        return mirror
    target = scratch / repo.replace("/", "+")
    if not target.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none",
                        f"https://github.com/{repo}", str(target)], check=True)
    return target


def reversed_diff(git: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={git}", "diff", commit, f"{commit}^", "--", path],
                          check=True, capture_output=True, text=True).stdout


def line_of(diff: str, needle: str, side: str) -> int:
    hits = []
    for hunk in PatchSet(diff)[0]:
        for line in hunk:
            if needle in line.value and (line.is_added if side == "new" else line.is_removed):
                hits.append(line.target_line_no if side == "new" else line.source_line_no)
    if len(hits) != 1:
        raise SystemExit(f"needle {needle!r} found {len(hits)} times on the {side} side")
    return int(hits[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirrors", type=Path)
    parser.add_argument("--only")
    args = parser.parse_args()
    sources = tomllib.loads((GOLDEN / "sources.toml").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:
        for case in sources["case"]:
            if args.only and case["id"] != args.only:
                continue
            git = git_dir(case["repo"], args.mirrors, Path(scratch))
            diff = reversed_diff(git, case["commit"], case["path"])
            line = line_of(diff, case["needle"], case["side"])
            folder = GOLDEN / case["id"]
            folder.mkdir(exist_ok=True)
            (folder / "change.diff").write_text(diff, encoding="utf-8")
            golden = {"id": case["id"], "comments": [
                {"path": case["path"], "line": line, "side": case["side"], "category": "bug",
                 "body": case["body"]}]}
            (folder / "golden.json").write_text(json.dumps(golden, indent=1) + "\n",
                                                encoding="utf-8")
            print(f"{case['id']}: {case['path']}:{line} ({case['side']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
