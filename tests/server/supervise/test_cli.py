"""`reviewbot server status` against a real status endpoint of the test's making: a row per
instance, exit 0 only when every one is ready, the endpoint found through the state file; and
`up`'s --warm-up-tokens read strictly. `up` as a process: test_supervisor.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from reviewbot_server.errors import BackendUnreachable
from reviewbot_server.process.launcher import free_port
from reviewbot_server.supervise.cli import STATE_FILE, _sizes, status
from reviewbot_server.supervise.status_app import Metrics, StatusServer, build_app


def _instance(name: str, state: str, error: str | None = None) -> dict[str, object]:
    return {"name": name, "state": state, "pid": 4100, "vllm_pid": 4101, "restarts": 1,
            "uptime_s": 12.5, "kv_cache_usage": 0.125, "requests_running": 3,
            "requests_waiting": 0, "url": f"http://127.0.0.1:80{name[-1]}0",
            "last_error": error}


@pytest.fixture
def shown() -> Iterator[tuple[dict[str, object], str]]:
    """What the endpoint answers (the test changes it), and its URL."""
    answer: dict[str, object] = {"instances": []}
    server = StatusServer(build_app(lambda: answer, Metrics()), free_port())
    server.start()
    yield answer, server.url
    server.stop()


def test_a_row_per_instance_and_exit_1_while_one_is_not_ready(
        shown: tuple[dict[str, object], str]) -> None:
    answer, url = shown
    answer["instances"] = [_instance("i0", "ready"),
                           _instance("i1", "backoff", "vLLM exited with code 1")]
    result = CliRunner().invoke(status, ["--url", url + "/"])
    header, first, second = result.stdout.splitlines()
    assert result.exit_code == 1 and header.startswith("instance")
    assert first.split()[:6] == ["i0", "ready", "4101", "1", "12.50s", "12.50%"]
    assert second.endswith("(vLLM exited with code 1)")
    answer["instances"] = [_instance("i0", "ready")]
    assert CliRunner().invoke(status, ["--url", url]).exit_code == 0


def test_an_error_quoting_vllm_is_one_visible_bounded_line(
        shown: tuple[dict[str, object], str]) -> None:
    """The supervisor's last error quotes vLLM's output: a terminal escape or a second line in
    it is written as an escape, and a long one is cut."""
    answer, url = shown
    answer["instances"] = [_instance("i0", "backoff", "\x1b[2J\x1b]0;owned\x07exited\nNext: "
                                     + "x" * 5000)]
    result = CliRunner().invoke(status, ["--url", url])
    (row,) = result.stdout.splitlines()[1:]
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "(\\x1b[2J\\x1b]0;owned\\x07exited\\x0aNext: xxx" in row
    assert len(row) < 500


def test_json_output_and_the_url_from_the_state_file(shown: tuple[dict[str, object], str],
                                                     tmp_path: Path) -> None:
    answer, url = shown
    answer["instances"] = [_instance("i0", "ready")]
    (tmp_path / STATE_FILE).write_text(json.dumps({"pid": 1, "status_url": url}))
    result = CliRunner().invoke(status, ["--state-dir", str(tmp_path), "--output", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == answer


def test_no_instance_at_all_is_not_ready(shown: tuple[dict[str, object], str]) -> None:
    assert CliRunner().invoke(status, ["--url", shown[1]]).exit_code == 1


def test_nobody_at_the_url_is_backend_unreachable() -> None:
    result = CliRunner().invoke(status, ["--url", f"http://127.0.0.1:{free_port()}"])
    assert isinstance(result.exception, BackendUnreachable)
    assert "no supervisor answers at http://127.0.0.1:" in str(result.exception)


def test_warm_up_sizes_are_token_counts() -> None:
    assert _sizes("64, 4096,") == (64, 4096) and _sizes("") == ()
    for bad in ("64,many", "-1"):
        with pytest.raises(click.BadParameter):
            _sizes(bad)
