"""`GET /readyz`: the queue database takes writes, the vLLM backend answers `/models`, the
worker pool's dispatcher runs."""

from __future__ import annotations

import asyncio

import httpx

from reviewbot.webhook.queue import JobQueue

BACKEND_TIMEOUT_S = 2.0
DB_TIMEOUT_S = 5.0


async def backend_reachable(base_url: str, timeout: float = BACKEND_TIMEOUT_S) -> str | None:
    """None if `GET {base_url}/models` answers 200, else a one-line reason."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.get(f"{base_url}/models")
    except httpx.HTTPError as exc:
        return f"backend unreachable: {type(exc).__name__}"
    if response.status_code != 200:
        return f"backend answered {response.status_code} to /models"
    return None


async def readiness(
    queue: JobQueue, backend_url: str | None, workers_alive: bool
) -> tuple[bool, dict[str, str]]:
    try:
        db_problem = await asyncio.wait_for(asyncio.to_thread(queue.check_writable),
                                            DB_TIMEOUT_S)
    except TimeoutError:
        db_problem = f"the database did not answer in {DB_TIMEOUT_S:g} s"
    backend_problem = await backend_reachable(backend_url) if backend_url else None
    checks = {
        "database": db_problem or "ok",
        "backend": backend_problem or ("ok" if backend_url else "not configured, not checked"),
        "workers": "ok" if workers_alive else "the dispatcher thread is not running",
    }
    return db_problem is None and backend_problem is None and workers_alive, checks
