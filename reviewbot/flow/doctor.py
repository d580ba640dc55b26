"""`reviewbot doctor`: a set-up checked end to end, each check with the one line that fixes it.

The model server (answers, serves the model, counts tokens, completes a forced tool call), each
forge whose token is set (reviewbot.forges.*.doctor), the webhook secrets and the listener's
database. Nothing here writes anything anywhere; no check's text holds a secret.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from reviewbot.checks import Check
from reviewbot.config import Settings
from reviewbot.engine.build import counter_for
from reviewbot.engine.llm import ModelClient
from reviewbot.engine.tokens import EstimateTokenCounter, LocalTokenCounter
from reviewbot.errors import BackendUnreachable, ModelNotServed, ReviewbotError
from reviewbot.forges import registry
from reviewbot.redact import redact
from reviewbot.secrets import weakness

SERVE_FIX = "start it (reviewbot server up) or fix --base-url / $REVIEWBOT_BASE_URL"
TOOL = {"type": "function", "function": {
    "name": "report", "description": "Report whether the check passed.",
    "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                   "required": ["ok"]}}}


@dataclass(frozen=True)
class Scope:
    """What to check besides the model: a GitLab project, a GitHub repository, the
    listener's public URL (its hooks), its database."""

    project: str | None = None
    repo: str | None = None
    listener: str | None = None
    db: str | None = None

    @property
    def projects(self) -> dict[str, str]:
        """The project named for each forge (`--project` is GitLab's, `--repo` GitHub's)."""
        named = {"gitlab": self.project, "github": self.repo}
        return {forge: project for forge, project in named.items() if project}


def run(settings: Settings, scope: Scope, env: Mapping[str, str]) -> list[Check]:
    checks = model(settings)
    for forge in registry.kinds():  # each forge whose token is set or whose project is named
        project = scope.projects.get(forge.name)
        if forge.settings(settings).token or project:
            checks += forge.check(settings, project, scope.listener)
    return checks + secrets(env, scope) + database(scope.db)


def model(settings: Settings) -> list[Check]:
    http = httpx.Client(timeout=30)
    client = ModelClient(settings.base_url, settings.api_key, 30, 0, http_client=http)
    try:
        served = client.discover(settings.model)
    except BackendUnreachable as exc:
        return [Check.failed("model server", str(exc), SERVE_FIX)]
    except ModelNotServed as exc:
        return [Check.ok("model server", client.shown_url),
                Check.failed("model", str(exc), "serve that model, or set `model` to one the "
                             "server has")]
    context = f", context {served.max_model_len:,} tokens" if served.max_model_len else ""
    checks = [Check.ok("model server", client.shown_url), Check.ok("model", served.model + context)]
    counter = counter_for(settings, client, served.model, http)
    if isinstance(counter, EstimateTokenCounter):
        checks.append(Check.failed("token counting", "no /tokenize on the server and no "
                                   "tokenizer set: chunks are sized by an estimate",
                                   "serve with vLLM, or set tokenizer = PATH/tokenizer.json"))
    else:
        how = f"tokenizer {settings.tokenizer}" if isinstance(counter, LocalTokenCounter) \
            else "the server's /tokenize"
        checks.append(Check.ok("token counting", how))
    return [*checks, _tool_call(client, served.model)]


def _tool_call(client: ModelClient, model: str) -> Check:
    fix = ("serve with --enable-auto-tool-choice and the model's --tool-call-parser "
           "(reviewbot server plan prints them)")
    try:
        reply = client.call_tool(model, [{"role": "user", "content": "Call report with ok."}],
                                 [TOOL], "report", 64, 0.0)
    except ReviewbotError as exc:
        return Check.failed("forced tool call", redact(str(exc))[:300], fix)
    sample = reply.samples[0]
    name, arguments = sample.calls[0] if sample.calls else ("", "")
    # a call the server made (its parser's), not words of the model's read as one
    if name != "report" or sample.text.strip():
        return Check.failed("forced tool call", "the answer held no report call", fix)
    try:
        parsed = json.loads(arguments or "null", strict=False)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return Check.ok("forced tool call", "report(...) came back as JSON")
    # the server forced the call, so its flags are right; the weights wrote the arguments
    return Check.ok("forced tool call", "the server forced the report call, but its arguments "
                    "were not a JSON object: expected from a random-weight test model (the "
                    "demo's), not from a real one; `reviewbot server check` says more")


def secrets(env: Mapping[str, str], scope: Scope) -> list[Check]:
    """The listener's secrets, where a listener is in scope; named, never shown."""
    if not (scope.listener or scope.db or any(k in env for k in _SECRETS)):
        return []
    out = []
    for name in _SECRETS:
        value = env.get(name)
        why = weakness(value) if value else "it is not set"
        if why is None:
            out.append(Check.ok(name, "set and strong"))
        elif value or name == "REVIEWBOT_ADMIN_TOKEN":
            out.append(Check.failed(name, f"refused: {why}",
                                    f"set {name} to the output of: openssl rand -hex 32"))
    if not any(env.get(n) for n in _SECRETS[:2]):
        out.append(Check.failed("webhook secret", "no webhook secret is set",
                                "set REVIEWBOT_GITLAB_WEBHOOK_SECRET and/or "
                                "REVIEWBOT_GITHUB_WEBHOOK_SECRET (openssl rand -hex 32)"))
    return out


_SECRETS = ("REVIEWBOT_GITLAB_WEBHOOK_SECRET", "REVIEWBOT_GITHUB_WEBHOOK_SECRET",
            "REVIEWBOT_ADMIN_TOKEN", "REVIEWBOT_DASHBOARD_TOKEN")


def database(url: str | None) -> list[Check]:
    """The listener's database: reachable, and at this release's schema."""
    if not url:
        return []
    from reviewbot.db import DatabaseError, display, open_existing
    from reviewbot.db.schema import MIGRATIONS, version

    try:
        db = open_existing(url)
        try:
            have, want = version(db), max(m.version for m in MIGRATIONS[db.dialect])
        finally:
            db.close()
    except (DatabaseError, ReviewbotError) as exc:
        return [Check.failed("database", redact(str(exc))[:300],
                             "check --db / $REVIEWBOT_QUEUE_URL and that the database is up")]
    if have != want:
        return [Check.failed("database", f"{display(url)}: schema {have}, this release {want}",
                             "start the listener once (it migrates), or upgrade reviewbot")]
    return [Check.ok("database", f"{display(url)}: schema {have}")]
