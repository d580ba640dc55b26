"""`--output json`: exactly `ReviewResult.to_dict()`, the contract documented in docs/output.md."""

from __future__ import annotations

import json

from reviewbot.result import ReviewResult


def render(result: ReviewResult) -> str:
    # Key order is the contract's order (to_dict's insertion order), not alphabetical, so that
    # diffs between two runs' outputs stay readable; ensure_ascii=False keeps paths and text legible.
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
