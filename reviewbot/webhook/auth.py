"""Constant-time checks of webhook tokens, webhook signatures and the listener's own tokens."""

from __future__ import annotations

import base64
import binascii
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


def token_given(authorization: str | None) -> str | None:
    """The token an `Authorization` header carries: `Bearer <token>`, or HTTP Basic with the
    token as the password (what a browser asks for), else None."""
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() == "bearer":
        return given.strip()
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(given.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2]
    return None


def any_token_ok(tokens: tuple[str | None, ...], authorization: str | None) -> bool:
    """Whether the header carries one of the configured `tokens` (each compared in constant
    time, so which one matched does not show)."""
    given = token_given(authorization)
    if given is None:
        return False
    matches = [hmac.compare_digest(given.encode(), t.encode()) for t in tokens if t]
    return any(matches)
