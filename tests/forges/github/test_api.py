"""The PyGithub client's own rules: the Enterprise REST root, which archive links are followed,
which failures are tried again, and one-line errors without the token."""

from __future__ import annotations

import io
import secrets
import time
from types import SimpleNamespace
from typing import Any

import pytest
from github import GithubException
from requests import ConnectionError as RequestsConnectionError

from reviewbot.archive import ArchiveTooLarge
from reviewbot.config import Settings
from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.github.api import (
    Retry,
    api_url,
    archive_allowed,
    download_archive,
    forge_error,
    make_client,
)
from tests.local_http import Answer, Start


def test_enterprise_base_url() -> None:
    assert api_url("https://github.com") == "https://api.github.com"
    assert api_url("https://api.github.com/") == "https://api.github.com"
    assert api_url("https://ghe.example.com") == "https://ghe.example.com/api/v3"
    assert api_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com/api/v3"


@pytest.mark.parametrize("link, url, allowed", [
    ("https://codeload.github.com/a/b/legacy.tar.gz/x?token=t", "https://github.com", True),
    ("https://api.github.com/repos/a/b/tarball/x", "https://api.github.com", True),
    ("https://ghe.example.com/api/v3/repos/a/b/tarball", "https://ghe.example.com", True),
    ("https://codeload.ghe.example.com/a/b/tar.gz/x", "https://ghe.example.com", True),
    ("http://codeload.github.com/a/b/legacy.tar.gz/x", "https://github.com", False),  # scheme
    ("https://evil.example/a.tar.gz", "https://github.com", False),
    ("https://codeload.github.com.evil.example/x", "https://github.com", False),
    ("https://ghe.example.com:8443/x", "https://ghe.example.com", False),  # port
])
def test_archive_links_are_followed_only_on_the_forges_own_hosts(link: str, url: str,
                                                                 allowed: bool) -> None:
    assert archive_allowed(link, url) is allowed


def _settings(url: str) -> ForgeSettings:
    return ForgeSettings.github(Settings(github_url=url, github_token="ghp_" + secrets.token_hex(18)))


def test_an_archive_is_read_within_its_bound_and_without_the_api_token(local_server: Start) -> None:
    server = local_server(lambda asked: Answer(200, b"x" * 1000))
    out = io.BytesIO()
    download_archive(server.url + "/api/v3/repos/a/b/tarball", _settings(server.url), out,
                     max_bytes=4096, deadline=time.monotonic() + 30)
    assert out.getvalue() == b"x" * 1000
    assert "Authorization" not in server.asked[0].headers
    with pytest.raises(ArchiveTooLarge):
        download_archive(server.url + "/api/v3/repos/a/b/tarball", _settings(server.url),
                         io.BytesIO(), max_bytes=100, deadline=time.monotonic() + 30)


def test_an_archive_link_elsewhere_or_a_redirect_is_not_followed(local_server: Start) -> None:
    server = local_server(lambda asked: Answer(302, headers={"Location": "http://10.0.0.1/"}))
    with pytest.raises(ForgeError, match="points away from the forge"):
        download_archive("http://127.0.0.2:1/x", _settings(server.url), io.BytesIO(), 100,
                         time.monotonic() + 30)
    with pytest.raises(ForgeError, match="downloading the archive failed: 302"):
        download_archive(server.url + "/x", _settings(server.url), io.BytesIO(), 100,
                         time.monotonic() + 30)
    assert len(server.asked) == 1  # the redirect was not taken


def test_a_post_answered_5xx_is_never_tried_again_a_get_is() -> None:
    retry = Retry(total=3)
    assert retry.is_retry("POST", 502) is False  # GitHub may have posted it: the poster checks
    assert retry.is_retry("GET", 502) is True
    assert retry.is_retry("POST", 429, has_retry_after=True) is True


def test_retry_after_is_honoured_up_to_the_longest_wait() -> None:
    answered = SimpleNamespace(headers={"Retry-After": "3600"})
    assert Retry(total=3, max_rate_limit_wait=120).get_retry_after(answered) == 120.0
    assert Retry(total=3, max_rate_limit_wait=None).get_retry_after(answered) == 3600


def test_no_token_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no GitHub token"):
        make_client(ForgeSettings.github(Settings()))


@pytest.mark.parametrize("data, says", [
    ({"message": "Validation Failed", "errors": [{"message": "line must be part of the diff"}]},
     "GitHub posting failed: HTTP 422 Validation Failed (line must be part of the diff)"),
    ({"message": "Validation Failed", "errors": ["pull_request_review_thread.line"]},
     "GitHub posting failed: HTTP 422 Validation Failed (pull_request_review_thread.line)"),
    ("<html>gateway</html>", "GitHub posting failed: HTTP 422"),
])
def test_a_refusal_is_one_line_with_githubs_first_reason(data: Any, says: str) -> None:
    error = forge_error("posting", GithubException(422, data, None))
    assert str(error) == says
    assert error.status == 422 and "\n" not in str(error)


def test_a_lost_connection_is_named_by_its_kind() -> None:
    error = forge_error("reading the pull request", RequestsConnectionError("refused"))
    assert str(error) == "GitHub reading the pull request failed: ConnectionError: refused"
