"""python-gitlab calls: the client, and every failure as a ForgeError that says what to do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import gitlab
import requests
from gitlab.exceptions import GitlabError

from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.base import ForgeSettings

T = TypeVar("T")


def client(settings: ForgeSettings) -> gitlab.Gitlab:
    """A python-gitlab client for a gitlab.com or self-managed instance (custom CA, ssl_verify)."""
    if not settings.token:
        raise UsageError("no GitLab token: pass --gitlab-token or set REVIEWBOT_GITLAB_TOKEN "
                         "or GITLAB_TOKEN (a project access token with the api scope)")
    return _Gitlab(settings.url, private_token=settings.token, ssl_verify=settings.verify,
                   timeout=60, per_page=100, retry_transient_errors=True,
                   retries=settings.retries)


class _Gitlab(gitlab.Gitlab):
    """python-gitlab retries 429, 5xx and lost connections 10 times (about 100 s of backoff
    against a forge that is down) whatever the client says: here `retries`, as for GitHub."""

    def __init__(self, *args: Any, retries: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._retries = retries

    def http_request(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("max_retries", self._retries)
        return super().http_request(*args, **kwargs)


# what to check when GitLab refuses to read the merge request
HINTS = {401: "the token is wrong or expired (REVIEWBOT_GITLAB_TOKEN, --gitlab-token)",
          403: "the token's user may not read it (a project access token, api scope)",
          404: "check --project and --mr, and that the token's user can see the project"}


def forge_error(exc: GitlabError, what: str) -> ForgeError:
    code = exc.response_code
    message = " ".join(str(exc.error_message).split())[:300]
    if code is not None and message.startswith(str(code)):  # GitLab's own "404 Not Found"
        message = message[len(str(code)):].strip()
    return ForgeError(f"GitLab: {what} failed: {code} {message}", status=code)


def call(fn: Callable[[], T], what: str) -> T:
    """Run one python-gitlab call (already retried on 429/5xx); failures become ForgeError.
    What it returns keeps python-gitlab's type."""
    try:
        return fn()
    except GitlabError as exc:
        raise forge_error(exc, what) from None
    except requests.exceptions.RequestException as exc:
        raise ForgeError(f"GitLab: {what} failed: {type(exc).__name__}") from None


def call_json(fn: Callable[[], object], what: str) -> dict[str, Any]:
    """`call` for what python-gitlab types `dict | Response`: the JSON object, else nothing."""
    value = call(fn, what)
    return value if isinstance(value, dict) else {}
