"""The ASGI app: thin routes over `Intake`, the queue and the readiness probe."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar, cast

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reviewbot.conversation.learnings import LearningStore
from reviewbot.db import DatabaseError
from reviewbot.forges.base import ForgeName
from reviewbot.history import HistoryStore
from reviewbot.webhook import dashboard as board
from reviewbot.webhook.auth import any_token_ok, bearer_ok
from reviewbot.webhook.intake import Answer, Intake
from reviewbot.webhook.jobs import STATES, ReviewRunner
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue
from reviewbot.webhook.ratelimit import RateLimiter
from reviewbot.webhook.readiness import readiness
from reviewbot.webhook.settings import WebhookSettings
from reviewbot.webhook.worker import PoolLimits, WorkerPool


class ForgeConvertor(Convertor[str]):
    """A forge's name in `/webhook/{forge}`; the intake answers 404 to one not registered."""

    regex = "[a-z][a-z0-9-]{0,39}"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("forge", ForgeConvertor())


# The longest a request waits on the database: inside GitLab's 10 s webhook timeout, so the
# forge gets a 503 and redelivers instead of a dropped connection.
DB_WAIT_S = 5.0
BOARD_CACHE_S = 5.0  # how old a dashboard page may be: its figures are by the day
T = TypeVar("T")


async def off_loop(work: Callable[[], T]) -> T:
    """`work()` (database calls) in a worker thread: a slow or stopped database stalls that
    request alone, never the event loop (/healthz answers at once); TimeoutError past
    DB_WAIT_S."""
    return await asyncio.wait_for(asyncio.to_thread(work), DB_WAIT_S)


def _unavailable(what: str) -> JSONResponse:
    return JSONResponse({"error": f"{what}: the queue database did not answer in time"},
                        status_code=503, headers={"Retry-After": "5"})


def _json(reply: Answer) -> JSONResponse:
    return JSONResponse(reply.body, status_code=reply.status)


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


_ROUTES = ("/webhook/gitlab", "/webhook/github", "/jobs", "/healthz", "/readyz", "/metrics",
           "/dashboard")


def _route(path: str) -> str:
    """A bounded label for /metrics: a known route, `/jobs/{id}`, or `other`."""
    if path in _ROUTES:
        return path
    return "/jobs/{id}" if path.startswith("/jobs/") else "other"


def counted(app: ASGIApp, metrics: Metrics) -> ASGIApp:
    """Every answer counted by route and status, outside Starlette's error handler, so that a
    500 (or a request that got no answer at all) is counted too."""
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        status = 500

        async def send_counted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await app(scope, receive, send_counted)
        finally:
            metrics.responses.labels(_route(scope["path"]), str(status)).inc()
    return wrapped


@dataclass(frozen=True)
class Parts:
    """What the routes read from `app.state.parts`: built once by `create_app`."""

    settings: WebhookSettings
    queue: JobQueue
    pool: WorkerPool
    intake: Intake
    metrics: Metrics
    board: BoardCache = field(default_factory=lambda: BoardCache())


class BoardCache:
    """The dashboard's page, built in one thread of its own (never those that take webhook
    events), at most once every BOARD_CACHE_S seconds: loads that come while it is built or
    fresh share it, so 30 loads at once cost one build."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dashboard")
        self._page: tuple[float, str] | None = None
        self._building: asyncio.Future[str] | None = None

    async def page(self, build: Callable[[], str]) -> str:
        if self._page is not None and time.monotonic() - self._page[0] < BOARD_CACHE_S:
            return self._page[1]
        if self._building is None or self._building.done():
            loop = asyncio.get_running_loop()
            self._building = asyncio.ensure_future(loop.run_in_executor(self._pool, build))
        page = await asyncio.wait_for(asyncio.shield(self._building), DB_WAIT_S)
        self._page = (time.monotonic(), page)
        return page


def _parts(request: Request) -> Parts:
    return cast(Parts, request.app.state.parts)


async def webhook(request: Request) -> Response:
    parts, forge = _parts(request), cast(ForgeName, request.path_params["forge"])
    source = request.client.host if request.client else "unknown"
    refused = parts.intake.admit(forge, source)
    if refused is not None:
        return _json(refused)
    try:
        body = await asyncio.wait_for(_read_limited(request, parts.settings.max_body_bytes),
                                      parts.settings.body_timeout_s)
    except TimeoutError:
        return _json(parts.intake.too_slow(forge))
    if body is None:
        return _json(parts.intake.too_large(forge))
    try:
        return _json(await off_loop(lambda: parts.intake.receive(forge, request.headers, body)))
    except TimeoutError:
        return _unavailable("not queued")


def _denied(request: Request) -> Response | None:
    token = _parts(request).settings.admin_token
    if not token:
        return JSONResponse({"error": "admin token not configured"}, status_code=403)
    if not bearer_ok(token, request.headers.get("authorization")):
        return JSONResponse({"error": "bad or missing bearer token"}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    return None


async def list_jobs(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    queue = _parts(request).queue
    asked = request.query_params.get("state")
    limit = request.query_params.get("limit", "100")
    state = next((s for s in STATES if s == asked), None)
    if (asked is not None and state is None) or not limit.isdigit():
        return JSONResponse({"error": "state must be one of " + ", ".join(STATES)
                             + "; limit a positive integer"}, status_code=400)
    try:
        records, counts = await off_loop(
            lambda: (queue.list(state, min(int(limit), 1000)), queue.counts()))
    except (TimeoutError, DatabaseError):
        return _unavailable("jobs not listed")
    return JSONResponse({"jobs": [r.to_json() for r in records], "counts": counts})


async def get_job(request: Request) -> Response:
    if (denied := _denied(request)) is not None:
        return denied
    queue, job_id = _parts(request).queue, cast(int, request.path_params["job_id"])
    if not 0 < job_id < 2**63:  # no row has such an id; the database would overflow on it
        return JSONResponse({"error": "no such job"}, status_code=404)
    try:
        record = await off_loop(lambda: queue.get(job_id))
    except (TimeoutError, DatabaseError):
        return _unavailable("job not read")
    if record is None:
        return JSONResponse({"error": "no such job"}, status_code=404)
    return JSONResponse(record.to_json())


async def dashboard(request: Request) -> Response:
    """The reviews at a glance, for the admin token or the read-only dashboard token (as a
    bearer token, or as the password a browser asks for)."""
    parts = _parts(request)
    tokens = (parts.settings.admin_token, parts.settings.dashboard_token)
    if not any(tokens):
        return JSONResponse({"error": "no admin or dashboard token configured"},
                            status_code=403)
    if not any_token_ok(tokens, request.headers.get("authorization")):
        return JSONResponse({"error": "bad or missing token"}, status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="reviewbot"'})
    db = parts.queue.db
    try:
        page = await parts.board.page(
            lambda: board.render(board.build(HistoryStore(db), LearningStore(db))))
    except (TimeoutError, DatabaseError):
        return _unavailable("dashboard not read")
    return HTMLResponse(page, headers={
        "Content-Security-Policy": board.CSP, "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"})


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    parts = _parts(request)
    # ?for=intake: can this replica take events (a load balancer's probe)? A vLLM outage must
    # not take every listener out of service: the events would be refused, not queued.
    backend = None if request.query_params.get("for") == "intake" else parts.settings.backend_url
    ok, checks = await readiness(parts.queue, backend, parts.pool.alive())
    return JSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)


async def metrics_endpoint(request: Request) -> Response:
    body, content_type = await asyncio.to_thread(_parts(request).metrics.render)
    return PlainTextResponse(body, media_type=content_type)


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    pool = cast(Parts, app.state.parts).pool
    pool.start()
    try:
        yield
    finally:
        pool.stop()


ROUTES = [
    Route("/webhook/{forge:forge}", webhook, methods=["POST"]),
    Route("/jobs", list_jobs, methods=["GET"]),
    Route("/jobs/{job_id:int}", get_job, methods=["GET"]),
    Route("/dashboard", dashboard, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics_endpoint, methods=["GET"]),
]


def create_app(settings: WebhookSettings, queue: JobQueue, runner: ReviewRunner) -> ASGIApp:
    metrics = Metrics(queue, settings.metrics_project_labels)
    limits = PoolLimits(
        workers=settings.workers,
        per_forge=settings.per_forge,
        max_attempts=settings.max_attempts,
        backoff_s=settings.retry_backoff_s,
        backoff_max_s=settings.retry_backoff_max_s,
        shutdown_grace_s=settings.shutdown_grace_s,
    )
    pool = WorkerPool(queue, runner, limits, metrics)
    limiter = RateLimiter(settings.rate_per_source, 2 * settings.rate_per_source)
    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.state.parts = Parts(settings, queue, pool,
                            Intake(settings, queue, pool, metrics, limiter), metrics)
    return counted(app, metrics)
