"""Each forge's webhook hook: its secret's variable, and what makes a delivery authentic."""

from __future__ import annotations

from reviewbot.webhook.auth import github_signature
from reviewbot.webhook.hooks import GITHUB, GITLAB, hooks

SECRET = "c3a9f0e4b7d21856a0fe93c4d7b1e2a5"


def test_every_registered_forge_has_a_hook_with_its_own_secret_variable() -> None:
    assert hooks() == {"gitlab": GITLAB, "github": GITHUB}
    assert {h.secret_variable for h in hooks().values()} == {
        "REVIEWBOT_GITLAB_WEBHOOK_SECRET", "REVIEWBOT_GITHUB_WEBHOOK_SECRET"}


def test_a_delivery_is_authentic_only_with_the_forges_own_proof() -> None:
    body = b'{"a": 1}'
    assert GITLAB.authentic(SECRET, {"x-gitlab-token": SECRET}, body)
    assert not GITLAB.authentic(SECRET, {"x-gitlab-token": SECRET[:-1]}, body)
    assert not GITLAB.authentic(None, {"x-gitlab-token": ""}, body)
    signed = {"x-hub-signature-256": github_signature(SECRET, body)}
    assert GITHUB.authentic(SECRET, signed, body)
    assert not GITHUB.authentic(SECRET, signed, body + b" ")
    assert GITHUB.pong == "ping" and GITLAB.pong == ""
