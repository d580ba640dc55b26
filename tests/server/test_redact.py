"""The server side's redaction, in memory: a registered secret wherever it appears (the longer
of two overlapping ones whole), credentials in a URL's user part or query, nothing else."""

from __future__ import annotations

import secrets

from reviewbot_server.redact import redact, register_secret


def test_a_registered_secret_is_removed_and_a_longer_one_whole() -> None:
    short = secrets.token_hex(4)
    longer = short + secrets.token_hex(4)
    register_secret(short)
    register_secret(longer)
    assert redact(f"key={longer}; again {short}.") == "key=***; again ***."


def test_credentials_in_urls_are_removed() -> None:
    assert redact("GET http://bot:pw@h:8000/v1 and https://tok@h/x") == \
        "GET http://***@h:8000/v1 and https://***@h/x"
    assert redact("/v1/models?api_key=abc&x=1&access_token=def#f") == \
        "/v1/models?api_key=***&x=1&access_token=***#f"


def test_what_is_not_a_secret_is_left_alone() -> None:
    register_secret("ab")  # too short to be one: registering it would blank ordinary words
    text = "about 12 abilities at http://127.0.0.1:8000/v1?model=qwen"
    assert redact(text) == text
