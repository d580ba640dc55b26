"""Secrets kept out of what the server side writes (its errors, vLLM's log lines, probe
output): the API key and tokens it was given, and credentials written into a URL."""

from __future__ import annotations

import re

_SECRETS: set[str] = set()

# userinfo in a URL (scheme://user:password@host)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
# a credential in a query string (?key=…, &access_token=…)
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:[\w.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth|credential)"
    r"[\w.-]*)=)[^&#\s]+")


def register_secret(value: str | None) -> None:
    if value and len(value) >= 4:
        _SECRETS.add(value)


def redact(text: str) -> str:
    # longest first: a secret that contains another is removed whole
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return _QUERY_SECRET.sub(r"\1***", _USERINFO.sub(r"\1***@", text))
