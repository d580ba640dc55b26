"""The listener's settings: resolved from flags and the environment, secrets strong and off the
command line, the queue named by one flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbot.errors import UsageError
from reviewbot.redact import redact
from reviewbot.webhook.settings import WebhookSettings, resolve_settings


def test_settings_resolution_and_secrets() -> None:
    env = {"REVIEWBOT_GITHUB_WEBHOOK_SECRET": "gh-settings-secret", "REVIEWBOT_WEBHOOK_ALLOW": "a/b, c/*",
           "REVIEWBOT_BASE_URL": "http://127.0.0.1:8000/v1/"}
    s = resolve_settings(env, port=9000)
    assert (s.port, s.allow, s.backend_url) == (9000, ("a/b", "c/*"), "http://127.0.0.1:8000/v1")
    assert resolve_settings(env, allow=["x/y"]).allow == ("x/y",)
    assert "gh-settings-secret" not in repr(s)
    assert redact("token gh-settings-secret") == "token ***"
    assert s.allowed_name("C/D") is not None and s.allowed_name("a/c") is None
    assert WebhookSettings().allowed_name("anything") is not None
    assert s.forge_allowed("https://gitlab.com/") and s.forge_allowed("https://API.github.com")
    assert not s.forge_allowed("https://gitlab.example.com")
    extra = resolve_settings({**env, "REVIEWBOT_WEBHOOK_FORGE_URLS": "https://git.corp"},
                             forge_url=["https://ghe.corp/api/v3"])
    assert extra.forge_allowed("https://git.corp") and extra.forge_allowed("https://ghe.corp/api/v3")
    with pytest.raises(UsageError, match="forge URL"):
        resolve_settings(env, forge_url=["git.corp"])
    with pytest.raises(UsageError, match="no webhook secret"):
        resolve_settings({})
    with pytest.raises(UsageError, match="--workers"):
        resolve_settings(env, workers=0)


def test_a_db_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    env = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "s3cret-1234-abcdef"}
    with pytest.raises(UsageError, match="does not exist"):
        resolve_settings(env, db=tmp_path / "no" / "such" / "q.sqlite")
    assert not (tmp_path / "no").exists()
    assert resolve_settings(env, db=tmp_path / "q.sqlite").db_path == tmp_path / "q.sqlite"


def test_the_queue_is_named_by_one_flag_and_its_password_is_secret(tmp_path: Path) -> None:
    env = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "s3cret-1234-abcdef"}
    with pytest.raises(UsageError, match="not both"):
        resolve_settings(env, db=tmp_path / "q.sqlite", queue_url="postgresql://h/db")
    with pytest.raises(UsageError, match="must be sqlite"):
        resolve_settings(env, queue_url="mysql://h/db")
    from_env = resolve_settings({**env, "REVIEWBOT_QUEUE_URL": "postgresql://bot:pw-9876@h/db"})
    assert from_env.database_url == "postgresql://bot:pw-9876@h/db"
    assert "pw-9876" not in repr(from_env) and redact("pw-9876 at h") == "*** at h"
    # a flag wins over the variable; the SQLite default is unchanged
    flagged = resolve_settings({**env, "REVIEWBOT_QUEUE_URL": "postgresql://h/db"},
                               db=tmp_path / "q.sqlite")
    assert flagged.database_url == f"sqlite:///{tmp_path / 'q.sqlite'}"
    assert resolve_settings(env).database_url == "sqlite:///.reviewbot-state/webhook.sqlite"


@pytest.mark.parametrize("weak", ["replace-me", "x", "changeme-please", "<your secret>",
                                  "s" * 20, "only-15-chars-x", "${WEBHOOK_SECRET}",
                                  # 16 characters, and guessed at once: a run, a repeated word
                                  "1234567890123456", "passwordpassword", "abcdefghijklmnop"])
@pytest.mark.parametrize("variable", ["REVIEWBOT_GITLAB_WEBHOOK_SECRET",
                                      "REVIEWBOT_GITHUB_WEBHOOK_SECRET", "REVIEWBOT_ADMIN_TOKEN",
                                      "REVIEWBOT_DASHBOARD_TOKEN"])
def test_placeholder_and_short_secrets_are_refused(variable: str, weak: str) -> None:
    env = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "9f2c41d07be3a58e6d10", variable: weak}
    with pytest.raises(UsageError, match=f"{variable} is refused") as caught:
        resolve_settings(env)
    assert len(weak) < 3 or weak not in str(caught.value)
    assert "openssl rand" in str(caught.value)  # how to make one
    assert resolve_settings({**env, variable: "Zq3-vT8pL1xW6nR2"})


def test_a_queue_password_on_the_command_line_is_refused() -> None:
    env = {"REVIEWBOT_GITLAB_WEBHOOK_SECRET": "9f2c41d07be3a58e6d10"}
    with pytest.raises(UsageError, match="--queue-url carries a password") as caught:
        resolve_settings(env, queue_url="postgresql://bot:pw-9876@h/db")
    assert "pw-9876" not in str(caught.value)
    assert resolve_settings(env, queue_url="postgresql://bot@h/db").queue_url  # PGPASSFILE
