"""The listener's job types, in memory: the states the code knows are the ones the database
allows, a record shows as `GET /jobs` promises, and a runner's optional failure report is
found by what it can do, not by its class."""

from __future__ import annotations

import inspect
import json
import re
import threading

from reviewbot.db import schema
from reviewbot.webhook.jobs import (
    STATES,
    FailureReporter,
    Job,
    JobOutcome,
    JobRecord,
    State,
)

JOB = Job(7, "gitlab", "g/p", 3, "a" * 40, "https://gitlab.example.com", "d1", 1.5, note_id=9)


def test_the_code_and_the_database_know_the_same_states() -> None:
    checks = re.findall(r"CHECK \(state IN \(([^)]*)\)\)", inspect.getsource(schema))
    assert checks  # PostgreSQL's jobs table holds the state to these values
    for check in checks:
        assert {s.strip(" '") for s in check.split(",")} == {s.value for s in STATES}


def test_a_record_shows_every_field_as_json() -> None:
    record = JobRecord(JOB, State.RUNNING, 2, "", None, 2.0, None, "host:1:w", 99.0)
    shown = json.loads(json.dumps(record.to_json()))
    assert shown["state"] == "running" and shown["note_id"] == 9
    assert shown["worker"] == "host:1:w" and shown["lease_until"] == 99.0
    assert set(shown) >= {"id", "forge", "project", "number", "head_sha", "delivery_id",
                          "attempts", "reason", "superseded_by", "started_at", "finished_at"}


def test_an_outcome_is_finished_or_cancelled() -> None:
    assert JobOutcome.done("posted 2").finished and not JobOutcome.cancelled().finished


def test_a_runner_that_can_report_a_failure_is_found_by_protocol() -> None:
    class Plain:
        def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
            return JobOutcome.done()

    class Reporting(Plain):
        def report_failure(self, job: Job, reason: str) -> None:
            pass

    assert isinstance(Reporting(), FailureReporter) and not isinstance(Plain(), FailureReporter)
