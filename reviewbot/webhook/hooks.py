"""How one forge's webhook deliveries are read: the variable holding its secret, the header
naming the event, whether a delivery is authentic, and its parser. The forge registry names
each forge's hook (reviewbot.forges.registry); the intake never compares forge names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reviewbot.forges import registry
from reviewbot.webhook.auth import github_signature_ok, gitlab_token_ok
from reviewbot.webhook.events import Accepted, Ignored, parse_github, parse_gitlab


@dataclass(frozen=True)
class Hook:
    secret_variable: str  # REVIEWBOT_<FORGE>_WEBHOOK_SECRET
    event_header: str  # lower case
    authentic: Callable[[str | None, Mapping[str, str], bytes], bool]  # (secret, headers, body)
    parse: Callable[[str | None, object], Accepted | Ignored]  # (event, payload)
    pong: str = ""  # an event answered "pong" before any parsing (GitHub's ping)


GITLAB = Hook("REVIEWBOT_GITLAB_WEBHOOK_SECRET", "x-gitlab-event",
              lambda secret, headers, body: gitlab_token_ok(secret, headers.get("x-gitlab-token")),
              parse_gitlab)
GITHUB = Hook("REVIEWBOT_GITHUB_WEBHOOK_SECRET", "x-github-event",
              lambda secret, headers, body: github_signature_ok(
                  secret, headers.get("x-hub-signature-256"), body),
              parse_github, pong="ping")


def hooks() -> dict[str, Hook]:
    """Each registered forge that takes webhooks, by name."""
    return {kind.name: hook for kind in registry.kinds() if (hook := kind.hook()) is not None}
