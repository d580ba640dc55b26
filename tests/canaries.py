"""Secrets as canaries: a steered model echoes them as given, upper-cased and cut to 14
characters, and no output of any command may carry one in any of those forms."""

from __future__ import annotations

from tests.fake_openai import Reply

API_KEY = "sk-canary-APIKEY-5521"
PASSWORD = "Canary-Pa55-word-77"  # the model server URL's password


def echoed(*canaries: str) -> str:
    return " ".join(f"{c} {c.upper()} {c[2:16]}" for c in canaries)


def with_password(base_url: str) -> str:
    return base_url.replace("http://", f"http://user:{PASSWORD}@")


def assert_no_canary(written: str, *canaries: str) -> None:
    for canary in canaries:
        for form in (canary, canary.upper(), canary[2:16]):
            assert form.lower() not in written.lower(), form


def echo_finding(row: int, leak: str) -> Reply:
    """One critical finding at `row` whose summary, title and body carry `leak`."""
    return Reply(tool_args={"summary": f"summary {leak}", "findings": [
        {"row": row, "title": f"title {leak}"[:120], "body": f"body {leak}",
         "category": "bug", "severity": "critical", "confidence": 0.9}]})
