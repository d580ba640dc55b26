"""The queue's contract, on both backends (a SQLite file; a real PostgreSQL database), and what
only a shared database must hold: several processes' queues claiming, enqueueing and migrating
at once."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from reviewbot.conversation.learnings import LearningStore
from reviewbot.db import DatabaseError
from reviewbot.webhook.jobs import QueuedRequest
from reviewbot.webhook.queue import JobQueue

FAR = 4e9  # a `now` after every lease (the year 2096)


def queued_request(number: int = 1, delivery: str = "d", sha: str = "s", note: int | None = None,
         ) -> QueuedRequest:
    return QueuedRequest("gitlab", "42", number, sha, "https://gitlab.example.com", delivery,
                         note)


def test_state_machine(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    first = q.enqueue(queued_request(delivery="d1", sha="s1"))
    assert first.created and q.enqueue(queued_request(delivery="d1", sha="s1")) == type(first)(first.job_id, False)
    job = q.claim()
    assert job is not None and job.id == first.job_id
    second = q.enqueue(queued_request(delivery="d2", sha="s2"))
    third = q.enqueue(queued_request(delivery="d3", sha="s3"))
    assert second.superseded_running == (first.job_id,)
    assert third.superseded_queued == (second.job_id,)
    assert not q.finish(first.job_id, "done")  # superseded while running: stays superseded
    other = q.enqueue(queued_request(number=2, delivery="d4"))
    assert other.superseded_running == other.superseded_queued == ()
    assert q.claim(busy_forges=frozenset({"gitlab"})) is None
    # the superseded review still holds the change until its worker has stopped it
    claimed = q.claim()
    assert claimed is not None and claimed.id == other.job_id
    assert q.claim() is None
    q.release(first.job_id)
    running = q.claim()
    assert running is not None and running.id == third.job_id
    q.close()
    reopened = JobQueue.open(queue_url)
    assert reopened.recover(max_attempts=3, now=FAR) == (2, 0)
    record = reopened.get(third.job_id)
    assert record is not None and (record.state, record.attempts) == ("queued", 1)
    assert reopened.counts() == {"queued": 2, "running": 0, "done": 0, "failed": 0, "superseded": 2}
    assert reopened.get(first.job_id).superseded_by == second.job_id  # type: ignore[union-attr]
    reopened.close()


def test_requeue_for_retry_respects_not_before(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    job_id = q.enqueue(queued_request(), now=100.0).job_id
    assert q.claim(now=100.0) is not None
    assert q.requeue(job_id, not_before=160.0, reason="attempt 1 failed")
    assert q.claim(now=150.0) is None and q.next_due() == 160.0
    assert q.claim(now=160.0) is not None and q.attempts(job_id) == 2
    q.close()


def test_recovery_fails_a_job_that_died_on_its_last_attempt(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    job_id = q.enqueue(queued_request()).job_id
    for _ in range(2):
        assert q.claim() is not None
        assert q.recover(max_attempts=2, now=FAR) == ((1, 0) if q.attempts(job_id) < 2 else (0, 1))
    record = q.get(job_id)
    assert record is not None and record.state == "failed" and "last attempt" in record.reason
    q.close()


def test_notes_run_beside_the_review_of_their_change_and_supersede_nothing(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    review = q.enqueue(queued_request(delivery="push"))
    assert q.claim() is not None
    note = q.enqueue(queued_request(delivery="note", note=7))
    assert note.superseded_running == note.superseded_queued == ()
    claimed = q.claim()
    assert claimed is not None and (claimed.id, claimed.note_id) == (note.job_id, 7)
    assert q.get(review.job_id).state == "running"  # type: ignore[union-attr]
    q.close()


def test_a_lease_is_renewed_and_a_lapsed_one_is_taken_over(queue_url: str) -> None:
    a = JobQueue.open(queue_url, lease_s=30)
    job_id = a.enqueue(queued_request(), now=1000.0).job_id
    assert a.claim(now=1000.0) is not None
    assert a.heartbeat([job_id], now=1020.0) == ()  # renewed to 1050
    assert a.expire(3, now=1040.0) == (0, 0)
    assert a.expire(3, now=1051.0) == (1, 0)  # its process stopped renewing
    record = a.get(job_id)
    assert record is not None and (record.state, record.lease_until) == ("queued", None)
    b = JobQueue(a.db, lease_s=30, worker="replica-b")
    assert b.claim(now=1052.0) is not None
    assert a.heartbeat([job_id], now=1053.0) == (job_id,)  # a learns it lost the job
    assert not a.finish(job_id, "done") and b.finish(job_id, "done")
    a.close()


def test_a_superseded_review_is_reported_lost_and_keeps_its_change_until_released(
        queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    first = q.enqueue(queued_request(delivery="d1")).job_id
    assert q.claim() is not None
    newer = q.enqueue(queued_request(delivery="d2", sha="s2")).job_id
    assert q.heartbeat([first]) == (first,)
    assert q.claim() is None  # one review at a time per change
    q.release(first)
    claimed = q.claim()
    assert claimed is not None and claimed.id == newer
    q.close()


def test_the_database_keeps_one_waiting_review_per_change(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    q.enqueue(queued_request(delivery="d1"))
    with pytest.raises(DatabaseError), q.db.tx() as tx:
        tx.execute("INSERT INTO jobs (forge, project, number, head_sha, base_url, delivery_id,"
                   " received_at) VALUES ('gitlab', '42', 1, 'x', 'u', 'other', 0)")
    assert q.counts()["queued"] == 1
    q.close()




def test_learnings_live_in_the_queue_database(queue_url: str) -> None:
    q = JobQueue.open(queue_url)
    store = LearningStore(q.db)
    kept = store.add("42", "Retries are deliberate here.", ("src/*",), "style", "alice", "note 9")
    store.add("43", "another project's", ("*",))
    assert [x.id for x in store.list("42")] == [kept] and store.get("43", kept) is None
    assert store.remove("42", kept) and not store.remove("42", kept)
    q.close()






# -- what only a shared database must hold ------------------------------------------------




def test_replicas_never_claim_one_job_twice(postgres_url: str) -> None:
    queues = [JobQueue.open(postgres_url) for _ in range(4)]
    for i in range(200):
        queues[i % 4].enqueue(queued_request(number=i, delivery=f"d{i}"))
    claimed: list[list[int]] = [[] for _ in queues]

    def work(k: int) -> None:
        while (job := queues[k].claim()) is not None:
            claimed[k].append(job.id)
            assert queues[k].finish(job.id, "done")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    every = [i for ids in claimed for i in ids]
    assert len(every) == len(set(every)) == 200
    assert sum(1 for ids in claimed if ids) > 1  # the replicas shared the work
    assert queues[0].counts()["done"] == 200
    for q in queues:
        q.close()


def test_replicas_taking_one_change_at_once_keep_one_job_per_event_and_one_waiting(
        postgres_url: str) -> None:
    queues = [JobQueue.open(postgres_url) for _ in range(4)]
    barrier = threading.Barrier(4)

    def send(k: int) -> None:
        barrier.wait()
        for i in range(25):  # every replica gets every event (duplicates, replays)
            queues[k].enqueue(queued_request(number=i % 5, delivery=f"push-{i}", sha=f"{i}"))

    threads = [threading.Thread(target=send, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    jobs = queues[0].list(limit=1000)
    assert Counter(j.job.delivery_id for j in jobs) == Counter(f"push-{i}" for i in range(25))
    waiting = Counter(j.job.number for j in jobs if j.state == "queued")
    assert waiting == Counter(range(5))  # the newest push of each change, once
    newest = {j.job.number: j.job.head_sha for j in jobs if j.state == "queued"}
    assert newest == {n: str(20 + n) for n in range(5)}
    for q in queues:
        q.close()


def test_a_replica_hears_of_new_jobs_and_of_its_superseded_review(postgres_url: str) -> None:
    here, there = JobQueue.open(postgres_url), JobQueue.open(postgres_url)
    stop, woken, cancelled = threading.Event(), threading.Event(), []
    watcher = threading.Thread(target=here.watch,
                               args=(woken.set, cancelled.extend, stop), daemon=True)
    watcher.start()
    time.sleep(0.5)  # LISTEN issued
    there.enqueue(queued_request(delivery="d1"))
    assert woken.wait(5)
    running = here.claim()
    assert running is not None
    there.enqueue(queued_request(delivery="d2", sha="s2"))
    deadline = time.monotonic() + 5
    while not cancelled and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cancelled == [running.id]
    stop.set()
    watcher.join(5)
    here.close()
    there.close()




