"""Secrets kept out of what the bot writes (reviewbot.redact): registered ones as given, in
any case and cut to pieces, and what looks like one in a URL, in messages, logs and warnings."""

from __future__ import annotations

import logging
import secrets
import warnings

import pytest

from reviewbot.redact import (
    PIECE,
    RedactingFilter,
    redact,
    redacting_warnings,
    register_secret,
    register_url,
)


def _secret() -> str:
    return "tok-" + secrets.token_hex(12)  # random: a registered secret blanks it everywhere


def test_a_registered_secret_is_gone_as_given_upper_cased_and_cut() -> None:
    value = _secret()
    register_secret(value)
    text = f"a {value} b {value.upper()} c {value[3:3 + PIECE + 2]} d"
    out = redact(text)
    assert value not in out and value.upper() not in out and value[3:3 + PIECE] not in out
    assert out.startswith("a *** b *** c ") and out.endswith(" d")


def test_a_urls_password_and_query_values_are_registered_and_userinfo_always_hidden() -> None:
    pw, sig = secrets.token_hex(8), secrets.token_hex(8)
    register_url(f"https://bot:{pw}@forge.example/api?sig={sig}&page=2")
    assert pw not in redact(f"echo {pw}") and sig not in redact(f"echo {sig}")
    unregistered = "https://someone:hunter2-" + secrets.token_hex(4) + "@h.example/x"
    assert redact(unregistered) == "https://***@h.example/x"
    assert redact("GET /x?access_token=abc123&q=1") == "GET /x?access_token=***&q=1"
    register_url("http://[::1")  # unparsable: nothing registered, no error


def test_short_values_are_not_secrets_that_would_blank_every_word() -> None:
    register_secret("abc")
    assert redact("abc abcd") == "abc abcd"


def test_log_lines_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    value = _secret()
    register_secret(value)
    logger = logging.getLogger("tests.redact")
    caplog.handler.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="tests.redact"):
        logger.info("calling %s", f"https://x/?token={value}")
    assert value not in caplog.text and "token=***" in caplog.text


def test_library_warnings_are_scrubbed_and_wrapped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    value = _secret()
    register_secret(value)
    shown: list[str] = []
    monkeypatch.setattr(warnings, "showwarning",  # what prints them, restored after the test
                        lambda message, *args, **kwargs: shown.append(str(message)))
    redacting_warnings()
    wrapped = warnings.showwarning
    redacting_warnings()
    assert warnings.showwarning is wrapped  # a second call does not wrap the first
    warnings.showwarning(f"base URL differs: https://u:{value}@h", UserWarning, "x.py", 1)
    assert shown == ["base URL differs: https://***@h"]
