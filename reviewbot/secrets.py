"""Secrets a team chooses (the webhook secrets, the admin token): refused when a guess would
find them, before anything listens."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from reviewbot.errors import UsageError

MIN_LENGTH = 16
_PLACEHOLDERS = frozenset({
    "replace-me", "replaceme", "replace_me", "change-me", "changeme", "change_me", "changeit",
    "secret", "password", "passw0rd", "token", "example", "test", "default", "none", "null",
    "todo", "fixme", "placeholder", "your-secret", "your-token", "my-secret", "mysecret",
})
_PLACEHOLDER_SHAPE = re.compile(r"(.)\1*|<.*>|\$\{.*\}|\{\{.*\}\}|(your|my|some)[-_ ].*|"
                                r"(replace|change)[-_ ]?me.*|x+|\.\.\.+", re.IGNORECASE)


def weakness(value: str) -> str | None:
    """Why `value` is no secret, or None."""
    if value.strip().lower() in _PLACEHOLDERS or _PLACEHOLDER_SHAPE.fullmatch(value.strip()):
        return "it is a placeholder"
    if len(value) < MIN_LENGTH:
        return f"it is shorter than {MIN_LENGTH} characters"
    return None


def require_strong(name: str, value: str | None) -> None:
    """UsageError naming the variable (never the value) when a set secret is weak."""
    why = weakness(value) if value else None
    if why:
        raise UsageError(f"{name} is refused: {why} (make one with: openssl rand -hex 32)")


def refuse_password_in_argv(flag: str, url: str | None) -> None:
    """A URL given as a flag is visible to every user of the machine (`ps`): it may name the
    user, never carry the password."""
    try:
        password = urlsplit(url or "").password
    except ValueError:
        password = None
    if password:
        raise UsageError(f"{flag} carries a password, which `ps` shows to every user of this "
                         "machine: set REVIEWBOT_QUEUE_URL instead, or keep the password in "
                         "PGPASSWORD or a PGPASSFILE (libpq reads both)")


def require_token_shape(name: str, value: str | None) -> None:
    """A token pasted with its line's end is said as such, not as a refusal by the server."""
    if value is not None and (not value.isprintable() or any(c.isspace() for c in value)):
        raise UsageError(f"{name} holds a space, newline or control character (pasted with "
                         "the line's end?): give the token alone")
