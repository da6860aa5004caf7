"""The queue end to end: real Redis, real `celery worker` processes, the sample controller (kind Probe).

Two workers of two pool processes each consume `reconcile` with a 1 s lease and a 0.2 s sweep
(TEST_QUEUE_TIMINGS in queue_harness.py). Every timestamp compared comes from the same host clock.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from itertools import cycle, pairwise

import pytest

from kube.controller.queue import ObjectKey, QueueConf, QueueStore, ReconcileQueue
from kube.tests.queue_harness import (
    Worker,
    emptied,
    queue_for,
    queue_idle,
    redis_client,
    runs,
    start_worker,
    starts,
    wait_for,
)

WORKER_LEASE = 1.0
BACKOFF_BASE = 0.05


@pytest.fixture(scope="module")
def client():
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture(scope="module")
def workers(client, tmp_path_factory) -> Iterator[dict[str, Worker]]:
    logdir = tmp_path_factory.mktemp("workers")
    started = {name: start_worker(name, logdir) for name in ("w1", "w2")}
    try:
        for worker in started.values():
            worker.wait_ready()
        yield started
    finally:
        for worker in started.values():
            worker.stop()


@pytest.fixture
def queue(client, workers) -> ReconcileQueue:
    return queue_for(client, QueueConf(backoff_max=30.0))


def enqueue(queue: ReconcileQueue, name: str) -> None:
    queue.enqueue("Probe", "tests", name)


def settled(client, member: str, count: int) -> bool:
    return len(runs(client, member)) >= count and queue_idle(client, "Probe")


def test_many_enqueues_while_a_key_runs_make_it_run_exactly_once_more(client, queue):
    member = "tests/once-more"
    client.rpush(f"probe:sleeps:{member}", 0.6)
    enqueue(queue, "once-more")
    wait_for(lambda: starts(client, member), 5, "the first run to start")

    threads = [
        threading.Thread(target=lambda: [enqueue(queue, "once-more") for _ in range(25)]) for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for(lambda: settled(client, member, 2), 10, "the second run")
    time.sleep(0.3)  # room for a wrong third run to show up

    first, second = runs(client, member)
    assert len(runs(client, member)) == 2
    assert second["start"] >= first["end"]


def test_runs_of_one_key_never_overlap_even_across_workers(client, queue):
    member = "tests/contended"
    client.rpush(f"probe:sleeps:{member}", *[0.02] * 200)
    last_enqueue = 0.0

    def hammer() -> None:
        nonlocal last_enqueue
        deadline = time.monotonic() + 1.5
        for pause in cycle((0.001, 0.007, 0.003, 0.01, 0.005)):
            if time.monotonic() > deadline:
                return
            last_enqueue = max(last_enqueue, time.time())
            enqueue(queue, "contended")
            time.sleep(pause)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for(lambda: queue_idle(client, "Probe"), 10, "the queue to drain")

    intervals = sorted((run["start"], run["end"]) for run in runs(client, member))
    assert len(intervals) > 10
    overlaps = [(a, b) for a, b in pairwise(intervals) if b[0] < a[1]]
    assert overlaps == []
    assert intervals[-1][0] >= last_enqueue  # the last event was not lost


def test_failures_retry_with_growing_backoff_that_resets_on_success(client, queue):
    member = "tests/flaky"
    store = QueueStore(client)
    client.set(f"probe:fail:{member}", 4)
    enqueue(queue, "flaky")
    wait_for(lambda: settled(client, member, 5), 10, "four failures and a success")

    history = runs(client, member)
    assert [run["failed"] for run in history] == [True] * 4 + [False]
    waits = [later["start"] - earlier["end"] for earlier, later in pairwise(history)]
    for wait, backoff in zip(waits, (0.05, 0.1, 0.2, 0.4), strict=True):
        assert backoff - 0.002 <= wait < backoff + 0.5
    assert store.failures(ObjectKey("Probe", "tests", "flaky")) == 0

    client.set(f"probe:fail:{member}", 1)
    enqueue(queue, "flaky")
    wait_for(lambda: settled(client, member, 7), 10, "one more failure and its retry")
    failed, retried = runs(client, member)[5:]
    assert BACKOFF_BASE - 0.002 <= retried["start"] - failed["end"] < 0.4  # back to the base, not 0.8 s


def test_a_worker_killed_with_sigkill_mid_reconcile_is_replaced_by_another(client, queue, workers):
    member = "tests/victim"
    client.rpush(f"probe:sleeps:{member}", 60)
    enqueue(queue, "victim")
    wait_for(lambda: starts(client, member), 5, "the run to start")
    hostname = starts(client, member)[0]["worker"]
    victim = next(worker for worker in workers.values() if hostname.startswith(worker.hostname_prefix))

    victim.kill_hard()
    killed_at = time.time()
    try:
        wait_for(lambda: settled(client, member, 1), 10, "another worker to reconcile the key")
        (run,) = runs(client, member)
        assert not run["worker"].startswith(victim.hostname_prefix)
        assert run["start"] - killed_at < WORKER_LEASE + 2.0
    finally:
        workers[victim.name] = start_worker(victim.name, victim.logfile.parent)
        workers[victim.name].wait_ready()


def test_a_pool_process_killed_mid_reconcile_gets_its_key_reconciled_again(client, queue):
    member = "tests/child-victim"
    client.rpush(f"probe:sleeps:{member}", 60)
    enqueue(queue, "child-victim")
    wait_for(lambda: starts(client, member), 5, "the run to start")

    os.kill(starts(client, member)[0]["pid"], signal.SIGKILL)
    wait_for(lambda: settled(client, member, 1), 10, "the key to be reconciled again")
    assert len(starts(client, member)) == 2


def test_concurrent_enqueues_of_many_keys_all_run(client, queue):
    names = [f"many-{index}" for index in range(300)]
    last_enqueue: dict[str, float] = {}

    def enqueue_all() -> None:
        for name in random.sample(names, len(names)):
            last_enqueue[name] = max(last_enqueue.get(name, 0.0), time.time())
            enqueue(queue, name)

    threads = [threading.Thread(target=enqueue_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for(lambda: queue_idle(client, "Probe"), 20, "every key to run")

    for name in names:
        history = runs(client, f"tests/{name}")
        assert 1 <= len(history) <= 4, name
        assert history[-1]["start"] >= last_enqueue[name] - 0.001, name
