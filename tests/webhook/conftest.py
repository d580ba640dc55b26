from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.webhook.recording_runner import RecordingRunner
from tests.webhook.webhook_support import ThreadServer, make_settings


@pytest.fixture
def runner(tmp_path: Path) -> RecordingRunner:
    return RecordingRunner(tmp_path / "reviews.sqlite")


@pytest.fixture
def server(tmp_path: Path, runner: RecordingRunner) -> Iterator[ThreadServer]:
    with ThreadServer(make_settings(tmp_path / "queue.sqlite"), runner) as srv:
        yield srv


@pytest.fixture
def client(server: ThreadServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c
