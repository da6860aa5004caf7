"""The whole path with real processes: kubesim (in this process, over HTTP) → the informers of the leading
`celery worker --controllers` → the reconcile queue on Redis → a worker runs the sample controller → it
writes back to kubesim. Two controller workers share one Lease (2 s, renew deadline 1.5 s, retry 0.25 s;
controller_worker_env in controller_harness.py) on Redis database 9.

The tests run in order on the same two workers; the last one kills the leader.
"""

from __future__ import annotations

import base64
import gc
import json
import subprocess
import sys
import time
from itertools import pairwise

import pytest

from kube.errors import NotFound
from kube.resources import CONFIGMAP, LEASE, SECRET
from kube.tests.controller_harness import (
    NAMESPACE,
    client_for,
    configmap,
    redis_client,
    start_controller_worker,
)
from kube.tests.queue_harness import emptied, wait_for
from kube.tests.sample_controller import ENABLED_LABEL, MIRROR_LOG, RUNS_LOG
from kubesim.testing import running_simulator

LEASE_NAME = "argoml-controllers-test"
LEASE_DURATION = 2.0
RETRY_PERIOD = 0.25
ENABLED = {ENABLED_LABEL: "true"}


@pytest.fixture(scope="module")
def sim():
    with running_simulator() as simulator:
        yield simulator


@pytest.fixture(scope="module")
def client(sim):
    return client_for(sim.kubeconfig_path)


@pytest.fixture(scope="module")
def redis():
    with emptied(redis_client()) as connection:
        yield connection


@pytest.fixture(scope="module")
def workers(sim, redis, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("controller-workers")
    started = {name: start_controller_worker(name, logdir, sim.kubeconfig_path) for name in ("c1", "c2")}
    try:
        for worker in started.values():
            worker.wait_ready()
        yield started
    finally:
        for worker in started.values():
            worker.stop()


def holder(client) -> str:
    """The identity in the Lease: `<celery node name>_<pid>_<random>`, e.g. `c1@host_4242_1f2e3d4c`."""
    try:
        return client.get(LEASE, LEASE_NAME, NAMESPACE)["spec"].get("holderIdentity") or ""
    except NotFound:
        return ""


def mirrored(redis) -> list[dict]:
    return [json.loads(item) for item in redis.lrange(MIRROR_LOG, 0, -1)]


def runs(redis, name: str | None = None) -> list[dict]:
    records = [json.loads(item) for item in redis.lrange(RUNS_LOG, 0, -1)]
    return [record for record in records if name is None or record["name"] == name]


def secret_data(client, name: str) -> dict | None:
    try:
        return client.get(SECRET, f"{name}-copy", NAMESPACE).get("data") or {}
    except NotFound:
        return None


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def test_a_configmap_change_is_reconciled_by_a_worker_that_writes_back(client, redis, workers):
    client.create(CONFIGMAP, configmap("settings", {"colour": "blue"}, **ENABLED))
    wait_for(lambda: secret_data(client, "settings") == {"colour": b64("blue")}, 15, "the copy to be made")

    client.patch(CONFIGMAP, "settings", {"data": {"colour": "green"}}, NAMESPACE)
    wait_for(lambda: secret_data(client, "settings") == {"colour": b64("green")}, 5, "the copy to follow")

    # A child event reconciles its owner: the deleted copy comes back.
    client.delete(SECRET, "settings-copy", NAMESPACE)
    wait_for(lambda: secret_data(client, "settings") == {"colour": b64("green")}, 5, "the copy to return")


def test_only_the_lease_holder_watches(client, redis, workers):
    for index in range(5):
        client.create(CONFIGMAP, configmap(f"only-one-{index}", {"i": str(index)}, **ENABLED))
    wait_for(lambda: all(secret_data(client, f"only-one-{i}") for i in range(5)), 10, "the five copies")

    watching = {record["worker"] for record in mirrored(redis)}
    assert len(watching) == 1
    (leader,) = watching
    assert holder(client).startswith(f"{leader}@")
    assert f"became leader of lease default/{LEASE_NAME}" in workers[leader].logfile.read_text()
    other = next(name for name in workers if name != leader)
    assert "became leader" not in workers[other].logfile.read_text()


def test_reconciles_of_one_key_never_overlap_and_every_event_is_handled_once(client, redis, workers):
    for value in range(20):
        client.patch(CONFIGMAP, "settings", {"data": {"colour": f"shade-{value}"}}, NAMESPACE)
    wait_for(lambda: secret_data(client, "settings") == {"colour": b64("shade-19")}, 10, "the last shade")
    time.sleep(0.5)  # let the runs the last events caused finish

    settings_runs = sorted(runs(redis, "settings"), key=lambda record: record["start"])
    for earlier, later in pairwise(settings_runs):
        assert earlier["end"] <= later["start"], "two reconciles of one key overlapped"
    events = [(record["name"], record["rv"]) for record in mirrored(redis)]
    assert len(events) == len(set(events)), "an event was mirrored twice"


def test_when_the_leader_dies_the_other_takes_over_within_the_lease_duration(client, redis, workers):
    leader = mirrored(redis)[-1]["worker"]
    other = next(name for name in workers if name != leader)
    workers[leader].kill_hard()  # no chance to release the Lease
    killed_at = time.time()

    wait_for(lambda: holder(client).startswith(f"{other}@"), 10, "a new holder")
    took_over = time.time() - killed_at
    assert took_over <= LEASE_DURATION + 2 * RETRY_PERIOD + 1.0

    # The new leader lists (every object is mirrored again, by it) and keeps reconciling new changes.
    client.create(CONFIGMAP, configmap("after-failover", {"ok": "yes"}, **ENABLED))
    wait_for(lambda: secret_data(client, "after-failover") == {"ok": b64("yes")}, 10, "the copy")
    # The mirror writes on its own thread, batches gathering for a moment: it may come after the copy.
    wait_for(lambda: any(record["worker"] == other for record in mirrored(redis)), 10, "the new mirror")
    records = mirrored(redis)
    last_of_old = max(record["time"] for record in records if record["worker"] == leader)
    first_of_new = min(record["time"] for record in records if record["worker"] == other)
    assert last_of_old < killed_at <= first_of_new, "both workers watched at the same time"


def test_the_worker_option_is_offered_by_the_installed_app():
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "argoml_site", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "--controllers" in result.stdout


def test_a_worker_runs_no_controllers_unless_asked(settings):
    from kube.controller.bootstep import ControllersStep

    assert not ControllersStep(parent=None).enabled
    assert ControllersStep(parent=None, controllers=True).enabled
    settings.KUBE_CONTROLLERS_ENABLED = True
    assert ControllersStep(parent=None).enabled


def test_a_worker_with_the_controllers_collects_cyclic_garbage_less_often(monkeypatch):
    from kube.controller import bootstep, runtime

    monkeypatch.setattr(runtime, "manager_from_settings", lambda identity_prefix=None: object())
    before = gc.get_threshold()
    try:
        bootstep.ControllersStep(parent=None, controllers=True).create(parent=None)
        assert gc.get_threshold() == bootstep.CONTROLLER_GC_THRESHOLDS
        assert gc.get_threshold()[0] > before[0]
    finally:
        gc.set_threshold(*before)
