"""python-gitlab as the bot uses it: self-managed settings, `retries` bounding python-gitlab's
own retry loop, and every failure as one line that names the step, never the token."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitlab.exceptions import GitlabGetError
from requests.exceptions import ReadTimeout

from reviewbot.config import Settings
from reviewbot.errors import ForgeError, UsageError
from reviewbot.forges.base import ForgeSettings
from reviewbot.forges.gitlab.api import call, call_json, client, forge_error
from tests.forges.gitlab_support import TOKEN
from tests.local_http import Answer, Start


def test_self_managed_settings_reach_python_gitlab(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    gl = client(ForgeSettings.gitlab(Settings(gitlab_url="https://git.corp.example/gitlab",
                                              gitlab_token=TOKEN, ca_file=str(ca))))
    assert gl.url == "https://git.corp.example/gitlab" and gl.ssl_verify == str(ca)
    assert gl.retry_transient_errors is True
    assert client(ForgeSettings.gitlab(Settings(gitlab_token=TOKEN, ssl_verify=False))).ssl_verify is False
    with pytest.raises(UsageError, match="no GitLab token"):
        client(ForgeSettings.gitlab(Settings()))


@pytest.mark.parametrize("retries", [0, 2])
def test_retries_bound_python_gitlabs_own_loop(local_server: Start, retries: int) -> None:
    """python-gitlab would try a 503 ten times; the bot's `retries` is the bound."""
    server = local_server(lambda asked: Answer(503, {"message": "down"}, {"Retry-After": "0"}))
    gl = client(ForgeSettings.gitlab(Settings(gitlab_url=server.url, gitlab_token=TOKEN,
                                              retries=retries)))
    with pytest.raises(ForgeError, match="GitLab: reading the project failed: 503") as caught:
        call(lambda: gl.projects.get(1), "reading the project")
    assert len(server.asked) == retries + 1
    assert TOKEN not in str(caught.value)


def test_gitlabs_own_status_prefix_is_not_said_twice() -> None:
    error = forge_error(GitlabGetError("404 Project Not Found", 404), "reading the project")
    assert str(error) == "GitLab: reading the project failed: 404 Project Not Found"
    assert error.status == 404
    long = forge_error(GitlabGetError("x\n" * 400, 500), "reading")
    assert "\n" not in str(long) and len(str(long)) < 400


def test_a_lost_connection_names_its_kind_and_an_odd_answer_reads_as_empty() -> None:
    def times_out() -> None:
        raise ReadTimeout("read timed out (token glpat-...)")

    with pytest.raises(ForgeError, match=r"^GitLab: posting failed: ReadTimeout$"):
        call(times_out, "posting")
    assert call_json(lambda: {"id": 3}, "reading") == {"id": 3}
    assert call_json(lambda: ["not", "an", "object"], "reading") == {}
