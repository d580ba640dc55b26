"""`reviewbot webhook`: run the listener (settings resolved here, once, and passed down)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from reviewbot.redact import RedactingFilter
from reviewbot.webhook.settings import resolve_settings


@click.command()
@click.option("--host", default=None, help="Address to listen on [default: 127.0.0.1].")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port to listen on [default: 8080].")
@click.option("--db", type=click.Path(path_type=Path), default=None,
              help="Queue database, a SQLite file for one listener process "
                   "[default: .reviewbot-state/webhook.sqlite].")
@click.option("--queue-url", default=None, metavar="URL",
              help="Queue database by URL: sqlite:///PATH, or postgresql://USER@HOST/DB for "
                   "any number of listener replicas (also $REVIEWBOT_QUEUE_URL; put the "
                   "password in $PGPASSWORD or ~/.pgpass rather than in the URL).")
@click.option("--workers", type=int, default=None,
              help="Reviews at once against the backend [default: 2].")
@click.option("--per-forge", type=int, default=None, help="Reviews at once per forge [default: 2].")
@click.option("--allow", multiple=True, metavar="PROJECT",
              help="Allowed project (GitLab id or path, GitHub owner/repo; glob patterns "
                   "such as 'group/*'). Repeatable. Default: $REVIEWBOT_WEBHOOK_ALLOW, else all.")
@click.option("--forge-url", multiple=True, metavar="URL",
              help="A self-hosted forge jobs may point at: GitLab instance URL or GitHub "
                   "Enterprise API URL (https://HOST/api/v3). Repeatable; adds to "
                   "$REVIEWBOT_WEBHOOK_FORGE_URLS, https://gitlab.com and https://api.github.com.")
@click.option("--rate-limit", type=float, default=None,
              help="Requests/s per client address (burst twice that) [default: 100].")
@click.option("--max-body", type=int, default=None, help="Largest body in bytes [default: 2 MiB].")
@click.option("--max-attempts", type=int, default=None, help="Tries per review [default: 3].")
@click.option("--retry-backoff", type=float, default=None,
              help="Seconds before the first retry, doubled each time [default: 10].")
@click.option("--runner", default=None, metavar="MODULE:FUNCTION",
              help="TEST HOOK: run this function instead of the real review "
                   "(also $REVIEWBOT_WEBHOOK_RUNNER). Not for production.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="info", show_default=True)
def webhook(
    host: str | None,
    port: int | None,
    db: Path | None,
    queue_url: str | None,
    workers: int | None,
    per_forge: int | None,
    allow: tuple[str, ...],
    forge_url: tuple[str, ...],
    rate_limit: float | None,
    max_body: int | None,
    max_attempts: int | None,
    retry_backoff: float | None,
    runner: str | None,
    log_level: str,
) -> None:
    """Receive GitLab/GitHub webhooks and review every pushed MR/PR from a durable queue."""
    import uvicorn

    from reviewbot.webhook.app import create_app
    from reviewbot.webhook.queue import JobQueue
    from reviewbot.webhook.runner import load_runner
    from reviewbot.webhook.serving import server_config

    settings = resolve_settings(
        os.environ,
        host=host,
        port=port,
        db=db,
        queue_url=queue_url,
        workers=workers,
        per_forge=per_forge,
        allow=allow,
        forge_url=forge_url,
        rate_limit=rate_limit,
        max_body=max_body,
        max_attempts=max_attempts,
        retry_backoff=retry_backoff,
        runner=runner,
    )
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:  # no secret in any log line, whoever logs it
        handler.addFilter(RedactingFilter())
    from reviewbot import config
    from reviewbot.flow.trust import Trust

    # the review settings: REVIEWBOT_* and this directory's .reviewbot.toml, under each
    # project's own file on its target branch (read per job)
    trust = Trust.for_listener(os.environ)
    config.check_paths(trust.base())
    queue = JobQueue.open(settings.database_url, settings.lease_s)
    review = load_runner(settings.runner, trust, queue.db)
    try:
        app = create_app(settings, queue, review)
        uvicorn.Server(server_config(app, settings, settings.host, settings.port,
                                     log_level)).run()
    finally:
        queue.close()
