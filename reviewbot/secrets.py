"""Secrets a team chooses (the webhook secrets, the admin token): refused when a guess would
find them, before anything listens."""

from __future__ import annotations

import math
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


MIN_BITS = 64
# words a person reaches for; each counts as one guess among few, not as its letters
_WORDS = ("password", "passwd", "secret", "token", "admin", "letmein", "welcome", "qwerty",
          "asdf", "zxcv", "login", "master", "monkey", "dragon", "shadow", "sunshine", "iloveyou",
          "trustno1", "football", "baseball", "reviewbot", "gitlab", "github", "webhook",
          "hook", "change", "default", "example", "test", "hello", "abc", "root", "user",
          "guest", "access", "key", "private")


def entropy_bits(value: str) -> float:
    """A guesser's view of `value`, in bits: one period of a repeated text, each dictionary
    word one symbol, each character that repeats or continues a run (aaaa, abcd, 4321) free,
    the rest worth log2 of the character classes used."""
    text = _one_period(value)
    low = text.lower()
    for word in sorted(_WORDS, key=len, reverse=True):
        low = low.replace(word, "\0")
    classes = sum(size for pattern, size in _CLASSES if re.search(pattern, text))
    surprising, step = 0, None
    for prev, ch in zip(" " + low, low):
        diff = ord(ch) - ord(prev)
        if ch == "\0" or diff == 0 or (abs(diff) == 1 and step in (None, diff)):
            step = diff if abs(diff) == 1 else None
            if ch == "\0":
                surprising += 1
            continue
        surprising, step = surprising + 1, None
    return surprising * math.log2(max(2, classes))


_CLASSES = ((r"[a-z]", 26), (r"[A-Z]", 26), (r"[0-9]", 10), (r"[^a-zA-Z0-9]", 33))


def _one_period(value: str) -> str:
    for size in range(1, len(value) // 2 + 1):
        if len(value) % size == 0 and value[:size] * (len(value) // size) == value:
            return value[:size]
    return value


def weakness(value: str) -> str | None:
    """Why `value` is no secret, or None."""
    if value.strip().lower() in _PLACEHOLDERS or _PLACEHOLDER_SHAPE.fullmatch(value.strip()):
        return "it is a placeholder"
    if len(value) < MIN_LENGTH:
        return f"it is shorter than {MIN_LENGTH} characters"
    if (bits := entropy_bits(value)) < MIN_BITS:
        return (f"it is guessable (repeats, runs or common words: about "
                f"{bits:.0f} of the {MIN_BITS} bits a secret needs)")
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
