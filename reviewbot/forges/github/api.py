"""The PyGithub client reviewbot uses: Enterprise base URL, retries that respect GitHub's limits.

Retries (urllib3 through PyGithub's `GithubRetry`):
- 403 with `Retry-After` or a rate-limit message, 429, and 5xx are retried with exponential
  backoff and jitter, honouring `Retry-After` (capped at `max_wait` seconds);
- a POST that got a 5xx is *not* repeated: GitHub may have applied it, and a blind retry
  would post the review twice. The poster checks what landed instead (post.py);
- writes are spaced by `seconds_between_writes` (GitHub asks for ≥ 1 s between
  content-creating requests).
"""

from __future__ import annotations

from typing import Any, BinaryIO
from urllib.parse import urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from requests import RequestException

from reviewbot.archive import copy_bounded
from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.base import ForgeSettings, unreadable_change
from reviewbot.redact import register_secret

PUBLIC_API = "https://api.github.com"


def api_url(url: str) -> str:
    """The REST root: api.github.com as is; GitHub Enterprise hosts get `/api/v3`."""
    url = url.rstrip("/")
    host = urlsplit(url).hostname or ""
    if host in ("github.com", "www.github.com", "api.github.com"):
        return PUBLIC_API
    return url if url.endswith("/api/v3") else url + "/api/v3"


def archive_allowed(link: str, url: str) -> bool:
    """An archive link on the API's own host or its codeload host (`codeload.github.com` for
    api.github.com, `codeload.HOST` for GitHub Enterprise), by the API's scheme."""
    got, base = urlsplit(link), urlsplit(api_url(url))
    host = base.hostname or ""
    allowed = {host, "codeload." + host.removeprefix("api.")}
    return got.scheme == base.scheme and got.hostname in allowed and got.port == base.port


class Retry(GithubRetry):
    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method == "POST" and status_code >= 500:
            return False
        return bool(super().is_retry(method, status_code, has_retry_after))

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        if seconds is None or self.max_rate_limit_wait is None:
            return seconds
        return float(min(seconds, self.max_rate_limit_wait))


def download_archive(link: str, settings: ForgeSettings, out: BinaryIO, max_bytes: int,
                     deadline: float) -> None:
    """Follow an archive link only on the forge's own hosts; the link carries its own
    short-lived token, so no Authorization header is sent."""
    if not archive_allowed(link, settings.url):
        raise ForgeError("GitHub: the archive link points away from the forge; not followed")
    try:
        with requests.get(link, stream=True, timeout=settings.timeout,
                          verify=settings.verify, allow_redirects=False) as answer:
            if answer.status_code != 200:
                raise ForgeError(f"GitHub: downloading the archive failed: {answer.status_code}")
            copy_bounded(answer.iter_content(65536), out, max_bytes, deadline)
    except RequestException as exc:
        raise ForgeError(f"GitHub: downloading the archive failed: {type(exc).__name__}") from None


def make_client(
    settings: ForgeSettings,
    *,
    seconds_between_writes: float = 1.0,
    seconds_between_requests: float = 0.25,
    max_wait: float = 120.0,
    backoff: float = 1.0,
) -> Github:
    token = settings.token
    if not token:
        raise UsageError("no GitHub token: pass --github-token or set GITHUB_TOKEN")
    register_secret(token)
    retry = Retry(
        total=settings.retries,
        backoff_factor=backoff,
        backoff_jitter=backoff / 2,
        backoff_max=max_wait,
        status_forcelist=[429, 500, 502, 503, 504],
        allowed_methods={"GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"},
        raise_on_status=False,  # the last response becomes a GithubException with its status
        secondary_rate_wait=min(60.0, max_wait),
        max_rate_limit_wait=max_wait,
    )
    return Github(
        auth=Auth.Token(token),
        base_url=api_url(settings.url),
        timeout=int(settings.timeout),
        per_page=100,
        verify=settings.verify,
        retry=retry,
        seconds_between_writes=seconds_between_writes,
        seconds_between_requests=seconds_between_requests,
    )


def forge_error(what: str, exc: GithubException | RequestException) -> ForgeError:
    """One line, no token: `GitHub <what> failed: HTTP 422 <message> (<first error>)`."""
    if isinstance(exc, RequestException):
        return ForgeError(f"GitHub {what} failed: {type(exc).__name__}: {exc}")
    data = exc.data if isinstance(exc.data, dict) else {}
    message = str(data.get("message") or exc.message or "")
    errors = data.get("errors") or []
    detail = errors[0] if errors else ""
    if isinstance(detail, dict):
        detail = detail.get("message") or detail.get("code") or ""
    text = f"GitHub {what} failed: HTTP {exc.status} {message}"
    if detail:
        text += f" ({detail})"
    return ForgeError(text, status=exc.status, body=str(exc.data)[:2000])



# what to check when GitHub refuses to read the pull request
_HINTS = {401: "the token is wrong or expired (GITHUB_TOKEN, --github-token)",
          403: "the token may not read it (pull requests and contents: read)",
          404: "check --repo and --pr, and that the token can see the repository"}


def change_error(what: str, exc: GithubException | RequestException) -> ForgeError:
    """`forge_error` for reading the pull request itself: a refusal is the user's input."""
    return unreadable_change(forge_error(what, exc), _HINTS)

def error_text(exc: GithubException) -> str:
    """Everything GitHub said, lower-cased, for classifying a 422."""
    data = exc.data if isinstance(exc.data, dict) else {"message": str(exc.data)}
    return str(data).lower()
