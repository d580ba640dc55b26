"""The server side's errors: the exit code each kind documents, one line, and no secret the
server was given, in the message or in the log lines a launch error carries."""

from __future__ import annotations

import secrets

import pytest

from reviewbot_server.errors import (
    BackendUnreachable,
    LaunchError,
    ManifestError,
    PlanRefused,
    ServerError,
    UsageError,
)
from reviewbot_server.redact import register_secret


@pytest.mark.parametrize(("error", "code"), [
    (UsageError("bad flag"), 2), (BackendUnreachable("down"), 3), (LaunchError("exit 1"), 3),
    (ManifestError("sha mismatch"), 3), (PlanRefused("no fit", None), 1)])
def test_each_kind_has_its_documented_exit_code(error: ServerError, code: int) -> None:
    assert error.exit_code == code


def test_a_message_is_one_line_without_the_servers_secrets() -> None:
    key = "sk-" + secrets.token_hex(12)
    register_secret(key)
    error = LaunchError(f"vLLM exited:\n  --api-key {key}\n\tat http://u:pw@h/v1",
                        log_tail=[f"ERROR key={key}", "plain"])
    assert error.message == "vLLM exited: --api-key *** at http://***@h/v1"
    assert error.log_tail == ["ERROR key=***", "plain"] and not error.permanent
