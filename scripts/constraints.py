"""Write reviewbot/data/constraints.txt: every distribution the review path needs (reviewbot's
own requirements and theirs, no extras), pinned at the versions installed here, where the
tests ran. CI jobs install with it (templates/review.yml), so a run never resolves newer
python-gitlab, openai or PyGithub releases than the ones tested.

    .venv/bin/python scripts/constraints.py      # after upgrading a dependency on purpose
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

OUT = Path(__file__).parents[1] / "reviewbot" / "data" / "constraints.txt"


def closure(root: str) -> dict[str, str]:
    """name → installed version of `root`'s requirements, transitively, markers evaluated."""
    seen: dict[str, str] = {}
    todo = [root]
    while todo:
        dist = metadata.distribution(todo.pop())
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's requirement, or another platform's
            name = canonicalize_name(req.name)
            if name not in seen:
                seen[name] = metadata.version(name)
                todo.append(name)
    return seen


def render(pins: dict[str, str]) -> str:
    head = ("# The review path's dependencies at the versions the tests ran with "
            "(scripts/constraints.py).\n# CI jobs: pip install -c <this file> <reviewbot>\n")
    return head + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))


if __name__ == "__main__":
    OUT.write_text(render(closure("reviewbot")))
    print(f"wrote {OUT} ({len(closure('reviewbot'))} pins)", file=sys.stderr)
