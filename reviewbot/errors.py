"""Every error a user can see, with the exit code it maps to.

    ReviewbotError (exit 2)
    ├── UsageError           bad flag, config key or value
    │   └── ServerNotInstalled  `reviewbot server` or the demo without the server package
    ├── ContextTooSmall      the prompt's fixed part leaves no room for a diff
    ├── DiffError            not a diff, empty diff, unreadable input
    ├── ChangeTooLarge       a change beyond max_diff_mb, refused before any request
    ├── BackendError         (exit 3) the model server cannot be used
    │   ├── BackendUnreachable
    │   └── ModelNotServed   (exit 2) names the models that are served
    ├── ForgeError           (exit 3) GitLab/GitHub refused or failed; carries status and body
    ├── IncompleteReview     (exit 3) a review ran but did not cover everything
    └── MalformedPayload     (400 in the listener) a webhook body without the fields it needs

The server package (server/) has a tree of its own: it shares no code with the client.
A class without an exit code of its own has its parent's (tests/test_errors.py holds this
tree to the classes).

Signals between modules, caught before they reach anyone (their messages are safe to show):
    ContextTooLong, RequestFailed, BadAnswer   the model client → the engine
    Refused, Unavailable                       GitLab's write policy → the GitLab poster

Messages are one line and never contain secrets: `reviewbot.redact` scrubs known tokens and
the userinfo of URLs. Anything else that escapes reaches the CLI edge as one line, exit 3.
"""

from __future__ import annotations

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


class ServerNotInstalled(UsageError):
    """The server side lives in a package of its own, installed on the GPU host."""

    def __init__(self) -> None:
        super().__init__("this needs the reviewbot-server package, which is not installed "
                         "here: pip install ./server from a reviewbot checkout (it brings "
                         "vLLM), or reviewbot-server from your package registry")


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



class ForgeError(ReviewbotError):
    exit_code = EXIT_INCOMPLETE

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = redact(body)


class IncompleteReview(ReviewbotError):
    exit_code = EXIT_INCOMPLETE



class MalformedPayload(ReviewbotError):
    """The webhook body is not JSON, or lacks a field the event must carry."""



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
