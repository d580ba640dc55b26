"""What a review did not pass on, and why: files it skipped, candidates it dropped, findings
it held back from the forge's threads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from reviewbot.findings import Finding


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str
    # changed text the model did not see, skipped by a rule the change's author can trigger
    # (a generated marker, a lock-file name, a long line, a diff the forge withheld); False for
    # binary files, submodules, the config's exclude patterns and files with no changed lines
    source: bool = True


LOCK_FILE = "lock file"  # the skip reason of a dependency lock file (review_lock_files)


def unreviewed_error(skipped: Sequence[SkippedFile]) -> list[str]:
    """With fail_on_skipped: skipped source files make the review incomplete, and say which."""
    if not skipped:
        return []
    names = ", ".join(s.path for s in skipped[:5]) + (" …" if len(skipped) > 5 else "")
    return [f"{len(skipped)} changed source file(s) not reviewed and fail_on_skipped is set: {names}"]


class DropStage(StrEnum):
    AGREEMENT = "agreement"  # too few samples found it
    VERIFY = "verify"  # the verifier dropped it
    RESTATED = "restated"  # it repeats the change's own prose (engine.restatement)


@dataclass(frozen=True)
class Dropped:
    """A candidate finding that was not kept, and why."""

    finding: Finding
    stage: DropStage
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {**self.finding.to_dict(), "stage": self.stage, "reason": self.reason}


class HeldTo(StrEnum):
    SUMMARY = "summary"  # listed in the summary note
    NONE = "none"  # only counted there


@dataclass(frozen=True)
class Held:
    """A kept finding that a forge does not post as an inline thread (noise control)."""

    fingerprint: str
    to: HeldTo
    reason: str


DISMISSED = "dismissed by a project member earlier on this change"  # a Held reason
