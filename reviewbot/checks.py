"""A check of a set-up (`reviewbot doctor`): what was checked, how it went, and the one line
that fixes it. Never a secret in any of them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"  # could not be checked from here (the reason says why): not a failure


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str = ""
    fix: str = ""

    @classmethod
    def ok(cls, name: str, detail: str = "") -> Check:
        return cls(name, Status.OK, detail)

    @classmethod
    def failed(cls, name: str, detail: str, fix: str) -> Check:
        return cls(name, Status.FAILED, detail, fix)

    @classmethod
    def skipped(cls, name: str, detail: str) -> Check:
        return cls(name, Status.SKIPPED, detail)

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail,
                "fix": self.fix}


def settings_file(text: str | None, name: str) -> Check:
    """The check of a project's `.reviewbot.toml` (`text` None: there is none)."""
    from reviewbot.config import parse_text, resolve
    from reviewbot.errors import UsageError

    if text is None:
        return Check.ok("project settings", f"no {name}: the listener's settings apply")
    try:
        resolve({}, {}, file_values=parse_text(text, name))
    except UsageError as exc:
        return Check.failed("project settings", str(exc), f"fix {name}")
    return Check.ok("project settings", f"{name} parses")
