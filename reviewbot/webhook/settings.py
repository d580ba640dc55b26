"""Listener settings: typed, frozen, resolved once at the edge (flag > env > default).

Environment keys:
    REVIEWBOT_GITLAB_WEBHOOK_SECRET  the "Secret token" set on the GitLab hook
    REVIEWBOT_GITHUB_WEBHOOK_SECRET  the "Secret" set on the GitHub webhook / App
    REVIEWBOT_ADMIN_TOKEN            bearer token for GET /jobs (unset: /jobs refuses everyone)
    REVIEWBOT_WEBHOOK_ALLOW          allow-list, comma or space separated (--allow replaces it)
    REVIEWBOT_WEBHOOK_FORGE_URLS     forge base URLs jobs may point at, besides gitlab.com and
                                     api.github.com (--forge-url adds to them)
    REVIEWBOT_BASE_URL               the vLLM OpenAI base URL (…/v1) probed by /readyz
    REVIEWBOT_WEBHOOK_RUNNER         test hook: "module:function" replacing the review runner
    REVIEWBOT_WEBHOOK_HEADER_TIMEOUT seconds a client has to send its request headers (10)
    REVIEWBOT_WEBHOOK_BODY_TIMEOUT   seconds a client has to send the body (30)
    REVIEWBOT_QUEUE_URL              the queue database: sqlite:///PATH or postgresql://… (--db
                                     and --queue-url win; default: the SQLite file of --db)
    REVIEWBOT_WEBHOOK_LEASE          seconds a worker's claim on a job lasts unless renewed (30)
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewbot.db import LISTENER_DB
from reviewbot.errors import UsageError
from reviewbot.redact import register_secret, register_url
from reviewbot.secrets import refuse_password_in_argv, require_strong
from reviewbot.webhook.hooks import hooks

MIB = 1024 * 1024
PUBLIC_FORGES = ("https://gitlab.com", "https://api.github.com")


@dataclass(frozen=True)
class WebhookSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    db_path: Path = Path(LISTENER_DB)
    queue_url: str | None = field(default=None, repr=False)  # None: the SQLite file db_path
    lease_s: float = 30.0  # a job whose worker stops renewing its lease this long is taken over
    workers: int = 2  # concurrent reviews against the backend (the one vLLM server)
    per_forge: int = 2  # concurrent reviews against one forge
    allow: tuple[str, ...] = ()  # empty: every project whose hook authenticates
    # The review runs against the forge URL named in the payload, with our forge token:
    # only these base URLs are accepted, so a payload cannot send the token elsewhere.
    forge_urls: tuple[str, ...] = PUBLIC_FORGES
    # each forge's webhook secret, by forge name (REVIEWBOT_<FORGE>_WEBHOOK_SECRET)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    admin_token: str | None = field(default=None, repr=False)
    dashboard_token: str | None = field(default=None, repr=False)  # reads /dashboard only
    backend_url: str | None = None
    # /metrics needs no token: a project's name is for those who may see it, so the findings
    # gauge names no project unless the operator says so
    metrics_project_labels: bool = False
    max_body_bytes: int = 2 * MIB
    rate_per_source: float = 100.0  # requests/s per client address, burst of twice that
    max_attempts: int = 3
    retry_backoff_s: float = 10.0  # doubled per attempt, capped at retry_backoff_max_s
    retry_backoff_max_s: float = 300.0
    shutdown_grace_s: float = 10.0
    # a client that trickles its request is cut off: the headers within this many seconds of
    # the connection (or of the previous answer), the body within body_timeout_s
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    runner: str | None = None  # "module:function"; None means the real review

    @property
    def database_url(self) -> str:
        return self.queue_url or f"sqlite:///{self.db_path}"

    def forge_allowed(self, base_url: str) -> bool:
        wanted = base_url.rstrip("/").lower()
        return any(wanted == u.rstrip("/").lower() for u in self.forge_urls)

    def allowed_name(self, *names: str) -> str | None:
        """The first of `names` the allow-list admits (the first name when it is empty). Only
        normal project paths are matched: a glob like `group/*` must not admit
        `group/../../admin`."""
        given = [n for n in names if n and normal_path(n)]
        if not self.allow:
            return given[0] if given else None
        return next((n for n in given
                     if any(fnmatch.fnmatchcase(n.lower(), p.lower()) for p in self.allow)), None)


_SEGMENT = re.compile(r"[\w.+-]+")


def normal_path(name: str) -> bool:
    """A project path (or id) as the forges write it: segments of word characters, `.`, `+`
    and `-`, no empty, `.` or `..` segment."""
    return all(_SEGMENT.fullmatch(part) and part not in (".", "..")
               for part in name.split("/"))


def _seconds(env: Mapping[str, str], var: str, default: float) -> float:
    try:
        value = float(env.get(var) or default)
    except ValueError:
        raise UsageError(f"{var} must be a number of seconds") from None
    if not 0 < value < 86400:  # nan fails both comparisons
        raise UsageError(f"{var} must be a positive number of seconds, got {value}")
    return value


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v for v in (value or "").replace(",", " ").split() if v)


def _positive(name: str, value: float) -> None:
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {value}")


def _queue_url(db: Path | None, queue_url: str | None, env: Mapping[str, str]) -> str | None:
    if db is not None and queue_url:
        raise UsageError("give --db (a SQLite file) or --queue-url, not both")
    refuse_password_in_argv("--queue-url", queue_url)
    url = queue_url or (None if db is not None else env.get("REVIEWBOT_QUEUE_URL")) or None
    if url is not None and not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise UsageError("the queue URL must be sqlite:///PATH or postgresql://USER@HOST/DB")
    if url is not None and url.startswith("sqlite:///"):
        _check_db_dir(Path(url.removeprefix("sqlite:///")))
    return url


def _check_db_dir(db: Path) -> None:
    if not db.parent.is_dir():  # a typo must not grow a directory tree
        raise UsageError(f"--db {db}: the directory {db.parent} does not exist")


def _check(s: WebhookSettings, db: Path | None) -> None:
    for name, value in (
        ("--workers", s.workers),
        ("--per-forge", s.per_forge),
        ("--rate-limit", s.rate_per_source),
        ("--max-body", s.max_body_bytes),
        ("--max-attempts", s.max_attempts),
    ):
        _positive(name, value)
    if db is not None:
        _check_db_dir(db)
    for url in s.forge_urls:
        if not url.startswith(("https://", "http://")):
            raise UsageError(f"forge URL must start with https:// or http://, got {url!r}")
    if s.retry_backoff_s < 0:
        raise UsageError(f"--retry-backoff must not be negative, got {s.retry_backoff_s}")
    variables = {name: hook.secret_variable for name, hook in hooks().items()}
    if not s.secrets:
        raise UsageError(f"no webhook secret: set {' and/or '.join(variables.values())}")
    for name, secret in s.secrets.items():
        require_strong(variables[name], secret)
    require_strong("REVIEWBOT_ADMIN_TOKEN", s.admin_token)
    require_strong("REVIEWBOT_DASHBOARD_TOKEN", s.dashboard_token)


def resolve_settings(
    env: Mapping[str, str],
    *,
    host: str | None = None,
    port: int | None = None,
    db: Path | None = None,
    queue_url: str | None = None,
    workers: int | None = None,
    per_forge: int | None = None,
    allow: Sequence[str] = (),
    forge_url: Sequence[str] = (),
    rate_limit: float | None = None,
    max_body: int | None = None,
    max_attempts: int | None = None,
    retry_backoff: float | None = None,
    runner: str | None = None,
) -> WebhookSettings:
    """Build the settings from flags (None/empty: not given) over `env` over defaults."""
    d = WebhookSettings()
    s = WebhookSettings(
        host=host or d.host,
        port=d.port if port is None else port,
        db_path=db or d.db_path,
        queue_url=_queue_url(db, queue_url, env),
        lease_s=_seconds(env, "REVIEWBOT_WEBHOOK_LEASE", d.lease_s),
        workers=d.workers if workers is None else workers,
        per_forge=d.per_forge if per_forge is None else per_forge,
        allow=tuple(allow) or _split(env.get("REVIEWBOT_WEBHOOK_ALLOW")),
        forge_urls=(*PUBLIC_FORGES, *_split(env.get("REVIEWBOT_WEBHOOK_FORGE_URLS")), *forge_url),
        secrets={name: secret for name, hook in hooks().items()
                 if (secret := env.get(hook.secret_variable))},
        admin_token=env.get("REVIEWBOT_ADMIN_TOKEN") or None,
        dashboard_token=env.get("REVIEWBOT_DASHBOARD_TOKEN") or None,
        backend_url=(env.get("REVIEWBOT_BASE_URL") or "").rstrip("/") or None,
        metrics_project_labels=env.get("REVIEWBOT_METRICS_PROJECT_LABELS", "").lower()
        in ("1", "true", "yes"),
        max_body_bytes=d.max_body_bytes if max_body is None else max_body,
        rate_per_source=d.rate_per_source if rate_limit is None else rate_limit,
        max_attempts=d.max_attempts if max_attempts is None else max_attempts,
        retry_backoff_s=d.retry_backoff_s if retry_backoff is None else retry_backoff,
        runner=runner or env.get("REVIEWBOT_WEBHOOK_RUNNER") or None,
        header_timeout_s=_seconds(env, "REVIEWBOT_WEBHOOK_HEADER_TIMEOUT", d.header_timeout_s),
        body_timeout_s=_seconds(env, "REVIEWBOT_WEBHOOK_BODY_TIMEOUT", d.body_timeout_s),
    )
    _check(s, db)
    for secret in (*s.secrets.values(), s.admin_token, s.dashboard_token):
        register_secret(secret)
    register_url(s.queue_url)  # its password
    return s
