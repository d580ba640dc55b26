"""Constant-time checks of webhook tokens, webhook signatures and the admin bearer token."""

from __future__ import annotations

import hashlib
import hmac


def gitlab_token_ok(secret: str | None, header: str | None) -> bool:
    """`X-Gitlab-Token` is the shared secret itself."""
    if not secret or header is None:
        return False
    return hmac.compare_digest(header.encode(), secret.encode())


def github_signature(secret: str, body: bytes) -> str:
    """The `X-Hub-Signature-256` value GitHub sends for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def github_signature_ok(secret: str | None, header: str | None, body: bytes) -> bool:
    """`X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`."""
    if not secret or header is None:
        return False
    return hmac.compare_digest(header.encode(), github_signature(secret, body).encode())


def bearer_ok(token: str | None, authorization: str | None) -> bool:
    """`Authorization: Bearer <token>`; always False when no admin token is configured."""
    if not token or authorization is None:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
