"""Prometheus metrics of one listener, in a registry of its own (no global state)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from reviewbot.conversation.learnings import TALLY_DAYS, LearningStore
from reviewbot.db import DatabaseError
from reviewbot.webhook.jobs import State
from reviewbot.webhook.queue import JobQueue

_ACK_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
_JOB_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600)
MAX_PROJECTS = 1000  # label sets per scrape: a bound on the series one listener exports


class _QueueDepth(Collector):
    """Jobs per state, read from the database at scrape time."""

    def __init__(self, queue: JobQueue) -> None:
        self._queue = queue

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("reviewbot_webhook_database_up",
                               "1 when the queue database answered this scrape")
        try:
            counts = self._queue.counts()
        except DatabaseError:  # the rest of the listener's metrics are still worth reading
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        family = GaugeMetricFamily(
            "reviewbot_webhook_jobs", "Jobs in the queue database, by state", labels=["state"]
        )
        for state, count in counts.items():
            family.add_metric([state], count)
        yield family
        depth = GaugeMetricFamily(
            "reviewbot_webhook_queue_depth", "Jobs waiting or running (queued + running)"
        )
        depth.add_metric([], counts[State.QUEUED] + counts[State.RUNNING])
        yield depth


class _Outcomes(Collector):
    """What became of the findings posted in the last 30 days, read from the database at
    scrape time (the team's own precision: accepted / dismissed / open); per project only with
    `project_labels` (the endpoint needs no token)."""

    def __init__(self, store: LearningStore, project_labels: bool = False) -> None:
        self._store = store
        self._projects = project_labels

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "reviewbot_findings", f"Findings posted, by what became of them (last {TALLY_DAYS} "
            "days, the latest word on each)",
            labels=["project", "outcome"] if self._projects else ["outcome"])
        try:
            tallies = self._store.tally()
        except DatabaseError:  # reviewbot_webhook_database_up says so
            tallies = {}
        if self._projects:
            for project, counts in sorted(tallies.items())[:MAX_PROJECTS]:
                for outcome, count in counts.items():
                    family.add_metric([project, outcome.value], count)
        else:
            total: dict[str, int] = {}
            for counts in tallies.values():
                for outcome, count in counts.items():
                    total[outcome.value] = total.get(outcome.value, 0) + count
            for outcome_name, count in sorted(total.items()):
                family.add_metric([outcome_name], count)
        yield family


class Metrics:
    def __init__(self, queue: JobQueue, project_labels: bool = False) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.received = Counter(
            "reviewbot_webhook_events_received", "Webhook requests received", ["forge"], registry=r
        )
        self.rejected = Counter(
            "reviewbot_webhook_events_rejected",
            "Webhook requests refused (4xx), by reason",
            ["forge", "reason"],
            registry=r,
        )
        self.ignored = Counter(
            "reviewbot_webhook_events_ignored",
            "Authenticated events answered 200 without a job, by reason",
            ["forge", "reason"],
            registry=r,
        )
        self.accepted = Counter(
            "reviewbot_webhook_events_accepted",
            "Events that created a job (created) or matched a seen delivery (duplicate)",
            ["forge", "result"],
            registry=r,
        )
        self.ack_seconds = Histogram(
            "reviewbot_webhook_ack_seconds",
            "Time to answer an accepted webhook request",
            ["forge"],
            buckets=_ACK_BUCKETS,
            registry=r,
        )
        self.job_latency = Histogram(
            "reviewbot_webhook_job_latency_seconds",
            "From event received to job finished, by outcome",
            ["outcome"],
            buckets=_JOB_BUCKETS,
            registry=r,
        )
        self.reviews = Counter(
            "reviewbot_webhook_reviews",
            "Job outcomes: done, failed, superseded, retried",
            ["outcome"],
            registry=r,
        )
        self.responses = Counter(
            "reviewbot_webhook_responses",
            "Every answer the listener gave, by route and status (500s included)",
            ["route", "status"],
            registry=r,
        )
        r.register(_QueueDepth(queue))
        r.register(_Outcomes(LearningStore(queue.db), project_labels))

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
