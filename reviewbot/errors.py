"""Every error a user can see, with the exit code it maps to.

    ReviewbotError (exit 2)
    ├── UsageError           bad flag, config key or value
    ├── ContextTooSmall      the prompt's fixed part leaves no room for a diff
    ├── DiffError            not a diff, empty diff, unreadable input
    ├── ChangeTooLarge       a change beyond max_diff_mb, refused before any request
    ├── BackendError         (exit 3) the model server cannot be used
    │   ├── BackendUnreachable
    │   ├── ModelNotServed   (exit 2) names the models that are served
    │   ├── LaunchError      vLLM did not start or stay up; carries the last log lines
    │   └── ManifestError    the model directory does not match its SHA256SUMS
    ├── ForgeError           (exit 3) GitLab/GitHub refused or failed; carries status and body
    ├── IncompleteReview     (exit 3) a review ran but did not cover everything
    ├── MalformedPayload     (400 in the listener) a webhook body without the fields it needs
    └── PlanRefused          (exit 1) no deployment fits; carries the nearest one that does

A class without an exit code of its own has its parent's (tests/test_errors.py holds this
tree to the classes).

Signals between modules, caught before they reach anyone (their messages are safe to show):
    ContextTooLong, RequestFailed, BadAnswer   the model client → the engine
    Refused, Unavailable                       GitLab's write policy → the GitLab poster

Messages are one line and never contain secrets: `reviewbot.redact` scrubs known tokens and
the userinfo of URLs. Anything else that escapes reaches the CLI edge as one line, exit 3.
"""

from __future__ import annotations

from typing import Any

from reviewbot.redact import redact

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3

class ReviewbotError(Exception):
    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(str(message).split())))

    @property
    def message(self) -> str:
        return str(self)


class UsageError(ReviewbotError):
    pass


class ContextTooSmall(ReviewbotError):
    """The prompt's fixed part (system prompt, tools) leaves no room for a diff (exit 2)."""


class DiffError(ReviewbotError):
    pass


class ChangeTooLarge(ReviewbotError):
    """A change beyond `max_diff_mb` (exit 2): refused before any request, in one line."""


class BackendError(ReviewbotError):
    exit_code = EXIT_INCOMPLETE


class BackendUnreachable(BackendError):
    pass


class ModelNotServed(BackendError):
    exit_code = EXIT_USAGE


class LaunchError(BackendError):
    def __init__(self, message: str, log_tail: list[str] | None = None) -> None:
        super().__init__(message)
        self.log_tail = [redact(line) for line in log_tail or []]
        self.permanent = False  # a restart with the same argv cannot help (bad flag, …)


class ForgeError(ReviewbotError):
    exit_code = EXIT_INCOMPLETE

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = redact(body)


class IncompleteReview(ReviewbotError):
    exit_code = EXIT_INCOMPLETE


class ManifestError(BackendError):
    """The model directory does not match its manifest (exit 3)."""


class MalformedPayload(ReviewbotError):
    """The webhook body is not JSON, or lacks a field the event must carry."""


class PlanRefused(ReviewbotError):
    """No plan works; `nearest` is the closest one that does, `alternatives` other ways out."""

    exit_code = EXIT_FINDINGS

    def __init__(self, reason: str, nearest: Any, alternatives: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.nearest = nearest  # the planner's nearest Plan, or None
        self.alternatives = alternatives


class ContextTooLong(Exception):
    """The server says the request does not fit its context."""


class RequestFailed(Exception):
    """The request failed after the client's retries; the message is safe to show."""


class BadAnswer(Exception):
    """The server answered, but not with a chat completion we can use (worth another try)."""


class Refused(Exception):
    """GitLab answered 400/422: the position (or body) is not acceptable."""


class Unavailable(Exception):
    """Still failing after the last retry."""
