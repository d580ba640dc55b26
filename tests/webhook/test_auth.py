"""Webhook authentication: GitHub's HMAC signature (its published test vector), GitLab's token and
bearer tokens, compared in constant time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviewbot.webhook.auth import bearer_ok, github_signature, github_signature_ok, gitlab_token_ok

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
