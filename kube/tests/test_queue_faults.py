"""Redis faults under real processes: kubesim, two `celery worker --controllers` running the sample
controller, and a private redis-server (queue and broker) that the tests kill and restart empty, flush, or
pause. Every run is recorded in the shared test Redis (SAMPLE_RECORDS_REDIS_URL), which survives.

Each test creates a backlog (runs of 0.3 s, four pool processes), breaks Redis while keys are pending and
running, and checks that every object converges within seconds (not at the 10-minute resync), that no two
runs of one key overlapped, and that no child was created twice.
"""

from __future__ import annotations

import json
import time
from itertools import pairwise

import pytest

from kube.errors import NotFound
from kube.resources import CONFIGMAP, SECRET
from kube.tests.controller_harness import (
    NAMESPACE,
    client_for,
    configmap,
    redis_client,
    redis_url,
    start_controller_worker,
)
from kube.tests.queue_harness import emptied, wait_for
from kube.tests.redis_server import private_redis
from kube.tests.sample_controller import ENABLED_LABEL, RUNS_LOG
from kubesim.testing import running_simulator

RUN_SECONDS = 0.3
OBJECTS = 24
QUEUE_LEASE = 1.0  # controller_worker_env's
#: After Redis is back: the leader notices within its 1 s check, the fence holds new runs one lease, and
#: the backlog of 24 runs of 0.3 s on four pool processes takes about 2 s. Generous for a loaded machine,
#: far below the 10-minute resync that healed this before.
CONVERGE_WITHIN = 15.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with private_redis(tmp_path_factory.mktemp("private-redis")) as running:
        yield running


@pytest.fixture(scope="module")
def records():
    with emptied(redis_client()) as connection:
        yield connection


@pytest.fixture(scope="module")
def sim():
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture(scope="module")
def client(sim):
    return client_for(sim.kubeconfig_path)


@pytest.fixture(scope="module")
def workers(sim, server, records, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("fault-workers")
    extra = {"SAMPLE_RECORDS_REDIS_URL": redis_url(), "SAMPLE_RECONCILE_SECONDS": str(RUN_SECONDS)}
    started = {
        name: start_controller_worker(
            name, logdir, sim.kubeconfig_path, lease_name="argoml-queue-faults", queue_redis_url=server.url(),
            extra_env=extra,
        )
        for name in ("f1", "f2")
    }  # fmt: skip
    try:
        for worker in started.values():
            worker.wait_ready()
        yield started
    finally:
        for worker in started.values():
            worker.stop()


def runs(records, prefix: str) -> list[dict]:
    return [
        record
        for record in (json.loads(item) for item in records.lrange(RUNS_LOG, 0, -1))
        if record["name"].startswith(prefix)
    ]


def copies(client, names: list[str]) -> int:
    made = 0
    for name in names:
        try:
            client.get(SECRET, f"{name}-copy", NAMESPACE)
        except NotFound:
            continue
        made += 1
    return made


def create_backlog(client, records, prefix: str) -> list[str]:
    """Create the objects and return once some have run and most are still queued."""
    names = [f"{prefix}-{index}" for index in range(OBJECTS)]
    for name in names:
        client.create(CONFIGMAP, configmap(name, {"value": name}, **{ENABLED_LABEL: "true"}))
    wait_for(lambda: len(runs(records, prefix)) >= 2, 30, "the first runs")
    assert copies(client, names) < OBJECTS // 2, "the backlog drained before the fault; nothing to test"
    return names


def check_runs(records, sim, prefix: str, names: list[str]) -> None:
    by_name: dict[str, list[dict]] = {}
    for record in runs(records, prefix):
        by_name.setdefault(record["name"], []).append(record)
    for name, its_runs in by_name.items():
        ordered = sorted(its_runs, key=lambda record: record["start"])
        for earlier, later in pairwise(ordered):
            assert earlier["end"] <= later["start"], f"two runs of {name} overlapped: {earlier} {later}"
    assert set(by_name) == set(names)


def test_redis_restarted_empty_every_key_runs_again_within_seconds(client, records, sim, server, workers):
    names = create_backlog(client, records, "restart")
    server.restart_empty(down_for=1.0)
    back = time.monotonic()

    wait_for(lambda: copies(client, names) == OBJECTS, CONVERGE_WITHIN, "every copy after the restart")
    print(f"converged {time.monotonic() - back:.1f} s after Redis was back")
    time.sleep(QUEUE_LEASE)  # a run still owed would start and be recorded meanwhile
    check_runs(records, sim, "restart", names)
    assert sim.counters.count(verb="create", resource="secrets", code=409) == 0  # nothing created twice


def test_redis_flushed_every_key_runs_again_within_seconds(client, records, sim, server, workers):
    names = create_backlog(client, records, "flush")
    server.flushall()
    flushed = time.monotonic()

    wait_for(lambda: copies(client, names) == OBJECTS, CONVERGE_WITHIN, "every copy after the flush")
    print(f"converged {time.monotonic() - flushed:.1f} s after the flush")
    time.sleep(QUEUE_LEASE)
    check_runs(records, sim, "flush", names)
    assert sim.counters.count(verb="create", resource="secrets", code=409) == 0


def test_redis_paused_longer_than_a_lease_runs_in_progress_keep_their_keys_and_everything_resumes(
    client, records, sim, server, workers
):
    """SIGSTOP: connections stay open, nothing answers. A run that began before the pause and ends after it
    could not renew its lease; the queue must not hand its key to another run when Redis comes back (here
    its renewal, queued on its socket, usually lands first; test_queue_states.py's silence test makes the
    lease extension that guarantees it deterministic). Events during the pause run once it is over."""
    names = create_backlog(client, records, "pause")
    client.create(CONFIGMAP, configmap("pause-long", {"sleep": "5"}, **{ENABLED_LABEL: "true"}))
    time.sleep(1.0)  # its run has started (the backlog runs on four pool processes)
    server.pause()
    late = [f"pause-late-{index}" for index in range(4)]
    try:
        time.sleep(QUEUE_LEASE * 2.5)
        for name in late:  # their events cannot be enqueued now: the leader keeps them
            client.create(CONFIGMAP, configmap(name, {"value": name}, **{ENABLED_LABEL: "true"}))
    finally:
        server.resume()
    resumed = time.monotonic()

    everything = [*names, "pause-long", *late]
    wait_for(
        lambda: copies(client, everything) == len(everything), CONVERGE_WITHIN, "every copy after the pause"
    )
    print(f"converged {time.monotonic() - resumed:.1f} s after Redis resumed")
    time.sleep(QUEUE_LEASE)
    check_runs(records, sim, "pause", everything)
    assert sim.counters.count(verb="create", resource="secrets", code=409) == 0
