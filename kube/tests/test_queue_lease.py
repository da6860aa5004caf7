"""Leases of running keys, renewed by one thread per process, against real Redis (no worker, no Celery)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from kube.controller.queue import ObjectKey, QueueConf, QueueStore, ReconcileQueue, Registry
from kube.controller.queue.lease import LeaseKeeper
from kube.controller.queue.store import RefreshOutcome

from .queue_harness import emptied, redis_client

CONF = QueueConf(lease=0.3, sweep_interval=0.05, resend_after=5.0, worker_timeout=5.0)
INTERVAL = CONF.refresh_interval
LEASE_MS = QueueConf.ms(CONF.lease)


@pytest.fixture
def client() -> Iterator:
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture
def reconcilers() -> Registry:
    return Registry(discover_apps=False)


@pytest.fixture
def queue(client, reconcilers) -> ReconcileQueue:
    return ReconcileQueue(QueueStore(client), CONF, lambda key, countdown: None, reconcilers)


def key(name: str) -> ObjectKey:
    return ObjectKey("Widget", "team-a", name)


def lease_expiry(client, member: str) -> float | None:
    return client.zscore(QueueStore.keys("Widget")[1], member)


def test_runs_start_no_thread_of_their_own(queue, reconcilers):
    threads_seen: list[frozenset[threading.Thread]] = []
    reconcilers.register(
        "Widget", lambda namespace, name: threads_seen.append(frozenset(threading.enumerate()))
    )
    for index in range(20):
        queue.enqueue("Widget", "team-a", f"w{index}")
        assert queue.process("Widget", "team-a", f"w{index}") == "success"
    assert len(set(threads_seen[1:])) == 1  # the first run may start the process's renewer


def test_runs_at_the_same_time_all_keep_their_leases_past_the_lease(queue, reconcilers):
    def slow(namespace: str, name: str) -> None:
        time.sleep(CONF.lease * 2.5)

    reconcilers.register("Widget", slow)
    names = [f"w{index}" for index in range(4)]
    results: dict[str, str] = {}
    for name in names:
        queue.enqueue("Widget", "team-a", name)
    runs = [
        threading.Thread(target=lambda n=name: results.update({n: queue.process("Widget", "team-a", n)}))
        for name in names
    ]
    for run in runs:
        run.start()
    sent = []
    for _ in range(5):
        time.sleep(CONF.lease / 2)
        sent.append(queue.sweep())  # a lapsed lease would be taken back here
    for run in runs:
        run.join()
    assert sent == [0] * 5
    assert results == dict.fromkeys(names, "success")


def test_a_lease_taken_back_is_no_longer_renewed_and_the_run_learns_it(queue, client, caplog):
    queue.enqueue("Widget", "team-a", "w1")
    handed_on = queue.store.claim(key("w1"), "new-owner", LEASE_MS)
    assert handed_on.may_run
    with LeaseKeeper(queue.store, key("w1"), "paused-run", LEASE_MS, INTERVAL, handed_on.epoch) as lease:
        time.sleep(INTERVAL * 2.5)
        assert lease.lost
        assert "Lease lost while reconciling" in caplog.text
    assert client.hget(QueueStore.keys("Widget")[2], "team-a/w1") == "new-owner"


def test_a_finished_runs_lease_is_not_renewed_again(queue, client, caplog):
    queue.enqueue("Widget", "team-a", "w1")
    claim = queue.store.claim(key("w1"), "run", LEASE_MS)
    assert claim.may_run
    with LeaseKeeper(queue.store, key("w1"), "run", LEASE_MS, INTERVAL, claim.epoch) as lease:
        time.sleep(INTERVAL * 1.5)
        renewed = lease_expiry(client, "team-a/w1")
    time.sleep(INTERVAL * 0.2)  # a renewal already under way when the block ended may still land
    after_exit = lease_expiry(client, "team-a/w1")
    time.sleep(INTERVAL * 2)
    assert renewed is not None
    assert lease_expiry(client, "team-a/w1") == after_exit
    assert not lease.lost
    assert "Lease lost" not in caplog.text


class BrokenStore:
    def refresh(self, key: ObjectKey, token: str, lease_ms: int, epoch: str) -> RefreshOutcome:
        raise ConnectionError("Redis is unreachable")


def test_a_renewal_that_fails_is_retried_and_other_runs_keep_their_leases(queue, client, caplog):
    queue.enqueue("Widget", "team-a", "w1")
    claim = queue.store.claim(key("w1"), "run", LEASE_MS)
    assert claim.may_run
    broken = LeaseKeeper(BrokenStore(), key("w2"), "other", LEASE_MS, INTERVAL, claim.epoch)  # type: ignore[arg-type]
    with broken, LeaseKeeper(queue.store, key("w1"), "run", LEASE_MS, INTERVAL, claim.epoch):
        first = lease_expiry(client, "team-a/w1")
        time.sleep(INTERVAL * 3.5)
        assert lease_expiry(client, "team-a/w1") > first  # still renewed after the other's failures
    assert not broken.lost
    assert caplog.text.count("Cannot renew the lease") >= 2
