"""Secrets a team chooses (reviewbot.secrets): a guess would find the weak ones, so they are
refused by name, never echoed; a URL with a password and a token with a line's end are said
as such."""

from __future__ import annotations

import secrets as stdlib_secrets

import pytest

from reviewbot.errors import UsageError
from reviewbot.secrets import (
    entropy_bits,
    refuse_password_in_argv,
    require_strong,
    require_token_shape,
    weakness,
)


@pytest.mark.parametrize("value, why", [
    ("changeme", "placeholder"), ("<your secret here>", "placeholder"), ("${SECRET}", "placeholder"),
    ("xxxxxxxxxxxxxxxxxxxxxxxx", "placeholder"), ("Tr0ub4dor&3", "shorter than 16"),
    ("passwordpasswordpassword", "guessable"), ("abcdefghijklmnopqrstuvwxyz", "guessable"),
    ("reviewbot-webhook-secret-2026", "guessable"), ("0123456789012345678", "guessable"),
])
def test_what_a_guess_would_find_is_refused_with_the_reason(value: str, why: str) -> None:
    reason = weakness(value)
    assert reason is not None and why in reason


def test_a_random_secret_passes_and_scores_its_characters() -> None:
    value = stdlib_secrets.token_hex(16)
    assert weakness(value) is None and entropy_bits(value) >= 64
    assert entropy_bits(value * 3) == entropy_bits(value)  # a repeat adds nothing


def test_the_refusal_names_the_variable_never_the_value() -> None:
    with pytest.raises(UsageError) as caught:
        require_strong("REVIEWBOT_ADMIN_TOKEN", "letmein-letmein-letmein")
    assert "REVIEWBOT_ADMIN_TOKEN is refused" in str(caught.value)
    assert "letmein" not in str(caught.value)
    require_strong("REVIEWBOT_ADMIN_TOKEN", None)  # unset is not weak: the caller decides


def test_a_password_in_a_flags_url_is_refused_and_a_user_alone_is_not() -> None:
    pw = stdlib_secrets.token_hex(8)
    with pytest.raises(UsageError, match="--queue-url carries a password") as caught:
        refuse_password_in_argv("--queue-url", f"postgresql://bot:{pw}@127.0.0.1/q")
    assert pw not in str(caught.value)
    refuse_password_in_argv("--queue-url", "postgresql://bot@127.0.0.1/q")
    refuse_password_in_argv("--queue-url", "http://[::1")  # unparsable: not this check's job


@pytest.mark.parametrize("token", ["glpat-abc\n", "ghp abc", "tok\x00en"])
def test_a_token_pasted_with_its_lines_end_is_said_as_such(token: str) -> None:
    with pytest.raises(UsageError, match="pasted with the line's end"):
        require_token_shape("GITLAB_TOKEN", token)
    require_token_shape("GITLAB_TOKEN", "glpat-" + stdlib_secrets.token_hex(10))
