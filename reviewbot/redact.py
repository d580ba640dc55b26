"""Secrets kept out of everything the bot writes: a registry of the secrets it was given, and
`redact()` for error messages, log lines (`RedactingFilter`), library warnings and model text.
A secret is anything registered (tokens, passwords, a URL's password and query values) and
anything that looks like one in a URL (userinfo, a credential in the query string)."""

from __future__ import annotations

import logging
import re
from typing import Any

_SECRETS: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret so that nothing the bot writes ever shows it: error messages, log
    lines, warnings, and model text (a model can be steered into echoing one)."""
    if value and len(value) >= 4:
        _SECRETS.add(value)


def register_url(url: str | None) -> None:
    """The secrets a URL carries: its password and its query-string values."""
    if not url:
        return
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        register_secret(parts.password)
        for _, value in parse_qsl(parts.query):
            register_secret(value)
    except ValueError:
        return


# userinfo in a URL (scheme://user:password@host): a password written into base_url
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")
# a credential in a query string (?key=…, &access_token=…), whoever wrote the URL
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:[\w.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth|credential)"
    r"[\w.-]*)=)[^&#\s]+")


PIECE = 12  # a piece of a secret this long is a secret too (a server that echoes it cut)


def redact(text: str) -> str:
    # longest first: a secret that contains another is removed whole; in any case (a server
    # may echo it upper-cased), and any PIECE or more characters of it
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = re.sub(re.escape(secret), "***", text, flags=re.IGNORECASE)
        if len(secret) > PIECE:
            text = _without_pieces(text, secret.lower())
    return _QUERY_SECRET.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def _without_pieces(text: str, secret: str) -> str:
    """`text` with every run of PIECE or more characters that also runs in `secret` (case
    ignored) replaced by ***."""
    windows = {secret[i:i + PIECE] for i in range(len(secret) - PIECE + 1)}
    low, out, i, last = text.lower(), [], 0, 0
    while i <= len(low) - PIECE:
        if low[i:i + PIECE] not in windows:
            i += 1
            continue
        end = i + PIECE
        while end < len(low) and low[i:end + 1] in secret:
            end += 1
        out += [text[last:i], "***"]
        i = last = end
    return "".join(out) + text[last:]


def redacting_warnings() -> None:
    """Warnings that libraries print (python-gitlab's "base URL differs" names the URL as
    given, password included) go through `redact` before they reach stderr."""
    import warnings

    shown = warnings.showwarning
    if getattr(shown, "redacts", False):
        return

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        shown(redact(str(message)), category, filename, lineno, file, line)

    show.redacts = True  # type: ignore[attr-defined]
    warnings.showwarning = show


class RedactingFilter(logging.Filter):
    """A log handler filter: the formatted message, tokens and URL passwords scrubbed (httpx
    logs every request URL at INFO, userinfo included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
