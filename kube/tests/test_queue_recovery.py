"""A whole worker killed, with the shipped timings: every key it held runs again within 15 s.

The messages a killed worker had received but not run (prefetched, or countdowns waiting in its timer) are
not back in Redis until the broker's visibility timeout (an hour); the queue sends them again itself once the
worker's heartbeat lapses. Real Redis, real `celery worker` processes, the sample controller (kind Probe).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import pytest

from kube.controller.queue import QueueConf, QueueStore, ReconcileQueue
from kube.controller.queue.conf import DEFAULTS
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

RECOVERY_SECONDS = 15.0
BACKOFF = 15.0  # a failed key waits this long: its countdown message sits inside the victim meanwhile
# Shipped lease, sweep, resend and heartbeat timings: only the backoff is stretched, to hold messages.
TIMINGS = {name: str(value) for name, value in DEFAULTS.items() if name.startswith("KUBE_QUEUE_")}
TIMINGS |= {"KUBE_QUEUE_BACKOFF_BASE_SECONDS": str(BACKOFF), "KUBE_QUEUE_BACKOFF_MAX_SECONDS": "30.0"}


@pytest.fixture
def client():
    with emptied(redis_client()) as client:
        yield client


@pytest.fixture
def workers(tmp_path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def start(name: str, workers: list[Worker], logdir) -> Worker:
    worker = start_worker(name, logdir, timings=TIMINGS)
    workers.append(worker)
    worker.wait_ready(timeout=60)
    return worker


def test_every_key_a_killed_worker_held_runs_again_within_seconds_and_never_twice_at_once(
    client, workers, tmp_path
):
    queue: ReconcileQueue = queue_for(client, QueueConf(backoff_max=30.0))
    pending_key, running_key = QueueStore.keys("Probe")[:2]
    victim = start("victim", workers, tmp_path)

    # Countdown messages inside the victim: keys that failed once and wait out their backoff.
    backing_off = [f"tests/backoff-{index}" for index in range(3)]
    for member in backing_off:
        client.set(f"probe:fail:{member}", 1)
        queue.enqueue("Probe", "tests", member.split("/")[1])
    wait_for(lambda: all(runs(client, member) for member in backing_off), 20, "the first, failing runs")
    # Both pool processes busy for a minute, then more keys: their messages wait, some prefetched.
    busy = [f"tests/busy-{index}" for index in range(2)]
    for member in busy:
        client.rpush(f"probe:sleeps:{member}", 60)
        queue.enqueue("Probe", "tests", member.split("/")[1])
    wait_for(lambda: all(starts(client, member) for member in busy), 20, "the long runs to start")
    queued = [f"tests/queued-{index}" for index in range(4)]
    for member in queued:
        queue.enqueue("Probe", "tests", member.split("/")[1])

    start("survivor", workers, tmp_path)
    victim.kill_hard()
    killed_at = redis_time(client)
    # What the victim held when it died: keys still owed a run, and the runs it was in the middle of. The
    # survivor may already have taken some of the queued keys (done: not owed) or be running one (its own;
    # a run claimed a moment ago may not have recorded its start yet: the victim's two pool processes were
    # busy with the long runs, so such a run is the survivor's too).
    owed = {member: float(due) / 1000 for member, due in client.zrange(pending_key, 0, -1, withscores=True)}
    owed |= {
        member: 0.0
        for member in client.zrange(running_key, 0, -1)
        if any(str(start["worker"]).startswith("victim@") for start in starts(client, member)[-1:])
    }
    assert set(backing_off) <= owed.keys()
    assert set(busy) <= owed.keys()
    assert all(owed[member] > killed_at for member in backing_off)  # still held inside the victim

    def owed_runs_done() -> bool:
        return queue_idle(client, "Probe") and all(
            any(run["start"] > killed_at for run in runs(client, member)) for member in owed
        )

    wait_for(owed_runs_done, 60, "every key the victim held to run again")

    for member, due in owed.items():
        rerun = min(run["start"] for run in runs(client, member) if run["start"] > killed_at)
        assert rerun >= due - 0.05, member  # a backoff is never cut short
        assert rerun - max(due, killed_at) < RECOVERY_SECONDS, member
    for member in {*backing_off, *busy, *queued}:
        finished = [(run["start"], run["end"]) for run in runs(client, member)]
        killed = [(s["start"], killed_at) for s in starts(client, member) if s["start"] not in dict(finished)]
        intervals = sorted(finished + killed)
        assert [(a, b) for a, b in pairwise(intervals) if b[0] < a[1]] == [], member


def redis_time(client) -> float:
    seconds, microseconds = client.time()
    return seconds + microseconds / 1_000_000
