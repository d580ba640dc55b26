"""Pure pieces: signatures, payload parsing, settings, rate limiting, the queue state machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviewbot.errors import UsageError
from reviewbot.forges.markers import ReplyMarker
from reviewbot.redact import redact
from reviewbot.webhook.auth import bearer_ok, github_signature, github_signature_ok, gitlab_token_ok
from reviewbot.webhook.events import (
    Accepted,
    Ignored,
    MalformedPayload,
    github_api_base,
    gitlab_base_url,
    parse_github,
)
from reviewbot.webhook.jobs import QueuedRequest
from reviewbot.webhook.ratelimit import RateLimiter
from reviewbot.webhook.settings import WebhookSettings, resolve_settings

VECTOR = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_github_test_vector() -> None:
    assert github_signature("It's a Secret to Everybody", b"Hello, World!") == VECTOR
    assert github_signature_ok("It's a Secret to Everybody", VECTOR, b"Hello, World!")
    assert not github_signature_ok("It's a Secret to Everybody", VECTOR, b"Hello, World")
    assert not github_signature_ok(None, VECTOR, b"Hello, World!")


@given(st.binary(max_size=200), st.text(min_size=1, max_size=20))
def test_only_the_exact_signature_passes(body: bytes, tail: str) -> None:
    good = github_signature("s3cret", body)
    assert github_signature_ok("s3cret", good, body)
    assert not github_signature_ok("s3cret", good + tail, body)
    assert not github_signature_ok("s3cret", good[: -len(tail)], body)


def test_token_compares() -> None:
    assert gitlab_token_ok("abc", "abc") and not gitlab_token_ok("abc", "abd")
    assert not gitlab_token_ok(None, "") and not gitlab_token_ok("abc", None)
    assert bearer_ok("tok", "Bearer tok") and bearer_ok("tok", "bearer tok")
    assert not bearer_ok("tok", "Bearer tok2") and not bearer_ok(None, "Bearer ")


def test_base_urls() -> None:
    assert gitlab_base_url("https://git.example.com/gitlab/g/sub/p", "g/sub/p") == (
        "https://git.example.com/gitlab"
    )
    assert gitlab_base_url("https://git.example.com:8443/g/p", "") == "https://git.example.com:8443"
    assert github_api_base("https://api.github.com/repos/o/r", "o/r") == "https://api.github.com"
    assert github_api_base("https://ghe.corp/api/v3/repos/o/r", "o/r") == "https://ghe.corp/api/v3"
    with pytest.raises(MalformedPayload):
        github_api_base("https://api.github.com/repos/x/y", "o/r")


def test_github_parse() -> None:
    payload = {"action": "synchronize", "pull_request": {"number": 4, "head": {"sha": "f" * 40}},
               "repository": {"full_name": "o/r", "url": "https://api.github.com/repos/o/r"}}
    result = parse_github("pull_request", payload)
    assert isinstance(result, Accepted)
    # the event is the key, not the (unsigned) delivery id
    assert result.request == QueuedRequest("github", "o/r", 4, "f" * 40, "https://api.github.com",
                                           f"o/r#4@..{'f' * 40}/synchronize")
    assert isinstance(parse_github("push", payload), Ignored)
    with pytest.raises(MalformedPayload, match="pull_request.number must be an integer"):
        parse_github("pull_request", {**payload, "pull_request": {"number": "4"}})


def test_github_comments_are_queued_when_they_may_be_for_the_bot() -> None:
    repo = {"full_name": "o/r", "url": "https://api.github.com/repos/o/r"}
    review = {"action": "created", "repository": repo,
              "comment": {"id": 55, "body": "why?", "in_reply_to_id": 50},
              "pull_request": {"number": 4, "head": {"sha": "a" * 40}}}
    result = parse_github("pull_request_review_comment", review)
    assert isinstance(result, Accepted) and result.names == ("o/r",)
    assert result.request == QueuedRequest("github", "o/r", 4, "a" * 40, "https://api.github.com",
                                           "o/r/review-comment#55", note_id=55)
    talk = {"action": "created", "repository": repo, "comment": {"id": 56, "body": "@bot pause"},
            "issue": {"number": 4, "pull_request": {"url": "…"}}}
    result = parse_github("issue_comment", talk)
    assert isinstance(result, Accepted)
    assert (result.request.note_id, result.request.discussion_id) == (56, "issue")
    assert result.request.delivery_id == "o/r/comment#56" and result.request.head_sha == ""
    ignored = {
        "edited": parse_github("issue_comment", {**talk, "action": "edited"}),
        "plain issue": parse_github("issue_comment", {**talk, "issue": {"number": 4}}),
        "no mention": parse_github("issue_comment", {**talk, "comment": {"id": 57, "body": "ok"}}),
        "own": parse_github("pull_request_review_comment", {**review, "comment": {
            "id": 58, "body": "Withdrawn.\n\n" + ReplyMarker(50).render()}}),
    }
    assert all(isinstance(r, Ignored) for r in ignored.values()), ignored
    with pytest.raises(MalformedPayload, match="comment.id must be an integer"):
        parse_github("issue_comment", {**talk, "comment": {"id": "56", "body": "@bot x"}})


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


def test_rate_limiter_refills_and_forgets() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2, burst=4, max_sources=2, clock=lambda: now[0])
    assert [limiter.allow("a") for _ in range(5)] == [True] * 4 + [False]
    now[0] += 0.5
    assert limiter.allow("a") and not limiter.allow("a")
    for source in ("b", "c", "d"):
        limiter.allow(source)
    assert len(limiter._buckets) <= 3


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
