"""The listener's metrics over a real SQLite queue, in memory otherwise: jobs by state read at
scrape time, findings' outcomes summed (per project only when asked, since /metrics needs no
token), and a scrape that still answers when the database does not."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from reviewbot.conversation.learnings import FindingOutcome, LearningStore
from reviewbot.webhook.jobs import QueuedRequest, State
from reviewbot.webhook.metrics import Metrics
from reviewbot.webhook.queue import JobQueue


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render()[0].decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _queue(tmp_path: Path) -> JobQueue:
    q = JobQueue.open(tmp_path / "q.sqlite")
    for number in (1, 2, 3):
        q.enqueue(QueuedRequest("gitlab", "g/private", number, "s", "https://g", f"d{number}"))
    job = q.claim()
    assert job is not None
    q.finish(job.id, State.DONE)
    q.claim()  # one running
    store = LearningStore(q.db)
    store.record("g/private", "!1", ["a", "b"], FindingOutcome.ACCEPTED)
    store.record("g/other", "!2", ["c"], FindingOutcome.DISMISSED)
    return q


def test_jobs_by_state_and_the_queue_depth(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    got = _samples(Metrics(q))
    assert got[("reviewbot_webhook_database_up", ())] == 1
    assert got[("reviewbot_webhook_jobs", (("state", "done"),))] == 1
    assert got[("reviewbot_webhook_queue_depth", ())] == 2  # one queued, one running
    q.close()


def test_findings_are_summed_without_project_names_unless_asked(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    plain = _samples(Metrics(q))
    assert plain[("reviewbot_findings", (("outcome", "accepted"),))] == 2
    assert plain[("reviewbot_findings", (("outcome", "dismissed"),))] == 1
    assert not any("g/private" in str(labels) for _, labels in plain)
    labelled = _samples(Metrics(q, project_labels=True))
    assert labelled[("reviewbot_findings", (("outcome", "accepted"),
                                             ("project", "g/private")))] == 2
    q.close()


def test_a_scrape_answers_when_the_database_does_not(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    metrics = Metrics(q)
    metrics.received.labels(forge="gitlab").inc()
    q.db.close()  # every query now fails as the database would
    got = _samples(metrics)
    assert got[("reviewbot_webhook_database_up", ())] == 0
    assert got[("reviewbot_webhook_events_received_total", (("forge", "gitlab"),))] == 1
    assert not any(name == "reviewbot_webhook_jobs" for name, _ in got)
