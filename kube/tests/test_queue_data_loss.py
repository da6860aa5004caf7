"""Redis losing the queue's data (an empty restart, a failover to an empty replica, a flush), driven
in-process step by step against real Redis: who notices, the fence, and the runs that take their leases back.

Two ReconcileQueues on separate QueueStores stand for two processes: each remembers the epoch it last saw.
A loss is a FLUSHDB of the test database only (the kube/tests/test_queue_faults.py kills and flushes a
private redis-server); never FLUSHALL on a shared server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kube.controller.queue import Enqueued, ObjectKey, QueueConf, QueueStore, ReconcileQueue, Registry

from .queue_harness import RecordingSender, emptied, redis_client

CONF = QueueConf(backoff_base=0.001, backoff_max=30.0, lease=0.3, sweep_interval=0.05, resend_after=5.0)
FENCE_MS = QueueConf.ms(CONF.lease)
KEY = ObjectKey("Widget", "team-a", "w1")


@pytest.fixture
def client() -> Iterator:
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture
def reconcilers() -> Registry:
    return Registry(discover_apps=False)


def process_queue(client, reconcilers: Registry) -> tuple[ReconcileQueue, RecordingSender]:
    """The queue as one process sees it: its own store, so its own memory of the epoch."""
    sender = RecordingSender()
    return ReconcileQueue(QueueStore(client, fence_ms=FENCE_MS), CONF, sender, reconcilers), sender


def enqueue(queue: ReconcileQueue, key: ObjectKey = KEY) -> Enqueued:
    return queue.enqueue(key.kind, key.namespace, key.name)


def process(queue: ReconcileQueue, key: ObjectKey = KEY) -> str:
    return queue.process(key.kind, key.namespace, key.name)


def test_every_process_that_saw_the_data_counts_its_loss_once(client, reconcilers):
    worker, _ = process_queue(client, reconcilers)
    leader, _ = process_queue(client, reconcilers)
    assert (worker.losses("Widget"), leader.losses("Widget")) == (0, 0)
    assert leader.losses("Widget") == 0  # looking again changes nothing

    client.flushdb()
    enqueue(worker)  # the first step after the loss: a new epoch
    assert worker.store.losses("Widget") == 1
    assert leader.losses("Widget") == 1
    assert leader.losses("Widget") == 1
    assert leader.losses("Other") == 0  # each kind has its own epoch


def test_a_run_in_progress_when_redis_loses_its_data_takes_its_lease_back_and_nothing_overlaps_it(
    client, reconcilers
):
    """The run's lease is gone with the data. The leader enqueues the key again at once; a second worker
    receives the message and must not run it while the first run goes on."""
    worker, worker_sent = process_queue(client, reconcilers)
    other_worker, other_sent = process_queue(client, reconcilers)
    leader, _ = process_queue(client, reconcilers)
    seen_during_run: list[str] = []

    def reconcile(namespace: str, name: str) -> None:
        if seen_during_run:
            return
        client.flushdb()
        assert enqueue(leader) is Enqueued.ADDED  # what the leader does on noticing the loss
        seen_during_run.append(process(other_worker))  # its message, delivered at once: fenced
        time.sleep(CONF.refresh_interval * 1.5)  # the run's lease renewer takes the lease back
        seen_during_run.append(process(other_worker))  # the message again: the key is running now
        seen_during_run.append(process(other_worker))

    reconcilers.register("Widget", reconcile)
    enqueue(leader)
    other_worker.losses("Widget")  # every process has seen the first epoch
    assert process(worker) == "success"

    assert seen_during_run == ["early", "busy", "busy"]
    assert other_sent.sent[0][1] == pytest.approx(CONF.lease, abs=0.05)  # sent again for the fence's end
    assert worker_sent.sent == [(KEY, 0.0)]  # enqueued during the run: it runs once more afterwards
    time.sleep(CONF.lease)  # the fence is over
    assert process(other_worker) == "success"
    assert process(other_worker) == "stale"


def test_no_pending_key_is_claimed_until_a_lease_after_the_loss(client, reconcilers):
    reconcilers.register("Widget", lambda namespace, name: None)
    leader, sender = process_queue(client, reconcilers)
    enqueue(leader)
    client.flushdb()
    lost_at = time.monotonic()
    assert enqueue(leader) is Enqueued.ADDED
    assert process(leader) == "early"
    fence_left = sender.sent[-1][1]
    assert CONF.lease - 0.05 < fence_left <= CONF.lease
    time.sleep(fence_left + 0.01)
    assert process(leader) == "success"
    assert time.monotonic() - lost_at >= CONF.lease


def test_a_fresh_redis_is_not_fenced(client, reconcilers):
    """Nobody saw an earlier epoch: a first start (or a test's flush before any process ran) waits for
    nothing."""
    reconcilers.register("Widget", lambda namespace, name: None)
    queue, _ = process_queue(client, reconcilers)
    enqueue(queue)
    assert process(queue) == "success"


def test_an_epoch_made_by_a_process_that_never_saw_the_old_one_is_fenced_once_a_witness_arrives(
    client, reconcilers
):
    reconcilers.register("Widget", lambda namespace, name: None)
    witness, _ = process_queue(client, reconcilers)
    witness.losses("Widget")
    client.flushdb()
    newcomer, _ = process_queue(client, reconcilers)  # started while Redis was away
    enqueue(newcomer, ObjectKey("Widget", "team-a", "early-bird"))
    assert process(newcomer, ObjectKey("Widget", "team-a", "early-bird")) == "success"  # nobody knew yet

    assert witness.losses("Widget") == 1  # the witness's first look fences the epoch from its creation
    enqueue(newcomer)
    assert process(newcomer) == "early"


def test_a_run_that_ends_before_taking_its_lease_back_leaves_the_key_to_the_leaders_enqueue(
    client, reconcilers
):
    worker, sender = process_queue(client, reconcilers)

    def reconcile(namespace: str, name: str) -> None:
        client.flushdb()

    reconcilers.register("Widget", reconcile)
    enqueue(worker)
    sender.sent.clear()
    assert process(worker) == "success"  # its FINISH found no lease: nothing recorded, nothing sent
    assert sender.sent == []
    assert worker.store.status("Widget").owed_now is False
    assert worker.store.losses("Widget") == 1


def test_a_run_whose_key_was_handed_on_after_the_fence_does_not_take_it_back(client, reconcilers):
    """A run paused past the fence is like one paused past its lease: it learns the lease is lost."""
    worker, _ = process_queue(client, reconcilers)
    other_worker, _ = process_queue(client, reconcilers)
    enqueue(worker)
    claim = worker.store.claim(KEY, "paused-run", FENCE_MS)
    client.flushdb()
    enqueue(other_worker)
    time.sleep(CONF.lease + 0.01)
    other_worker.losses("Widget")
    assert other_worker.store.claim(KEY, "new-run", FENCE_MS).may_run
    assert worker.store.refresh(KEY, "paused-run", FENCE_MS, claim.epoch).held is False
