"""`reviewbot doctor`: check a set-up before the first merge request; exit 0 when every check
passed, 1 when one failed (each failure says how to fix it)."""

from __future__ import annotations

import json
import os

import click

from reviewbot.checks import Check, Status
from reviewbot.commands.options import database_option, emit
from reviewbot.modeltext import clean, one_line
from reviewbot.redact import redact


@click.command()
@click.option("--project", help="GitLab: check this project too (id or group/app).")
@click.option("--repo", help="GitHub: check this repository too (owner/name).")
@click.option("--listener-url", metavar="URL",
              help="The listener's public URL (https://reviewbot.example.com): the project's "
                   "hook must point at it.")
@database_option("The listener's database to check")
@click.option("--base-url", help="OpenAI-compatible base URL (default $REVIEWBOT_BASE_URL).")
@click.option("--model", help="Served model name (default: the first of /v1/models).")
@click.option("--gitlab-url", help="GitLab URL (default: $CI_SERVER_URL or https://gitlab.com).")
@click.option("--github-url", help="GitHub API URL (default: $GITHUB_API_URL).")
@click.option("--config", "config_path", help="Config file (default: ./.reviewbot.toml).")
@click.option("--output", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def doctor(project: str | None, repo: str | None, listener_url: str | None, db: str | None,
           config_path: str | None, fmt: str, **flags: object) -> None:
    """Check the model server, the forges, the webhook secrets and the listener's database.
    Tokens come from the environment (REVIEWBOT_GITLAB_TOKEN, GITHUB_TOKEN …); none is
    printed."""
    from reviewbot.flow import doctor as checks
    from reviewbot.flow.trust import Trust

    settings = Trust.for_cli({k: v for k, v in flags.items() if v is not None},
                             config_path).base()
    found = checks.run(settings, checks.Scope(project, repo, listener_url, db), os.environ)
    if fmt == "json":  # what servers said goes through the same redaction as the text
        emit(redact(json.dumps([c.to_dict() for c in found], indent=2, ensure_ascii=False))
             + "\n", None)
    else:
        emit("".join(_line(c) for c in found), None)
    raise SystemExit(1 if any(c.status is Status.FAILED for c in found) else 0)


def _line(c: Check) -> str:
    """A row; the texts came from servers (names, errors): one visible line each."""
    status = "FAILED" if c.status is Status.FAILED else c.status.value
    row = f"{status:<8} {c.name:<32} {one_line(clean(c.detail, 300))}\n"
    return row + (f"{'':<8} fix: {one_line(clean(c.fix, 300))}\n" if c.fix else "")
