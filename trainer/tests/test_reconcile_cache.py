"""TrainJob reconciles that read the leader's informer cache: the TrainJob, its runtime and its children
come from the cache (no API read), its own writes are waited for, and a stale cache is caught by the
status precondition and read again once. The informers are driven by hand (`relist()`), as in
jobs/tests/test_reconcile_cache.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from types import SimpleNamespace

import pytest
from django.test.utils import override_settings

from jobs import conf
from jobs.tests.cluster import pods
from kube.client import get_client, reset_client
from kube.controller import runtime
from kube.controller.registry import Controller, Owns
from kube.resources import CONFIGMAP, POD, SERVICE
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator
from trainer import constants as c
from trainer.reconcile import reconcile_train_job
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME
from trainer.tests.cluster import get_train_job, install_trainer, jobs_status, train_job

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=UTC)
_namespaces = count(1)


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_trainer(simulator)
        mp = pytest.MonkeyPatch()
        mp.setattr(conf, "now", simulator.clock.now)
        with override_settings(KUBECONFIG=str(simulator.kubeconfig_path), KUBE_IN_CLUSTER=False):
            reset_client()
            yield simulator
        mp.undo()
        reset_client()


@pytest.fixture
def ns(sim: Simulator) -> str:
    name = f"tjcache-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


class PausedRuntime:
    """The TrainJob controller's informers in this process, as the leader has them, caught up on demand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        controller = Controller(  # the registered controller without its mirrors (no database here)
            TRAIN_JOB,
            (
                Owns(POD, label_selector=c.LABEL_JOBSET_NAME),
                Owns(SERVICE, label_selector=c.LABEL_JOBSET_NAME),
                Owns(CONFIGMAP, label_selector=c.LABEL_JOBSET_NAME),
                Owns(TRAINING_RUNTIME),
                Owns(CLUSTER_TRAINING_RUNTIME),
            ),
        )
        self.runtime = runtime.ControllerRuntime(get_client(), [controller], enqueue=lambda *key: None)
        monkeypatch.setattr(
            runtime, "_active_manager", SimpleNamespace(runtime=self.runtime, pid=os.getpid())
        )

    def catch_up(self) -> None:
        for informer in self.runtime.informers.values():
            informer.relist()


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> PausedRuntime:
    return PausedRuntime(monkeypatch)


def reads_of_a_run(sim: Simulator, namespace: str, name: str) -> int:
    sim.counters.reset()
    reconcile_train_job(namespace, name)
    sim.store.wait_idle()
    return sum(n for verb, n in sim.counters.by_verb().items() if verb.split()[0] in ("get", "list"))


def test_a_current_cache_serves_every_read_runtime_included_from_submission_to_running(sim, ns, cache):
    sim.store.create(train_job("quiet", ns, "deepspeed-distributed", trainer={"numNodes": 3}))
    cache.catch_up()
    assert reads_of_a_run(sim, ns, "quiet") == 0
    assert sorted(pods(sim, ns)) == ["quiet-node-0-0", "quiet-node-0-1"]

    cache.catch_up()
    assert reads_of_a_run(sim, ns, "quiet") == 0
    sim.advance(1)  # the kubelet starts the nodes: Ready, so the launcher may start
    sim.store.wait_idle()
    cache.catch_up()
    assert reads_of_a_run(sim, ns, "quiet") == 0
    assert "quiet-launcher-0-0" in pods(sim, ns)


def test_a_run_waits_for_the_events_of_its_own_writes(sim, ns, cache):
    sim.store.create(train_job("waits", ns, "torch-distributed", trainer={"numNodes": 2}))
    cache.catch_up()
    reconcile_train_job(ns, "waits")
    sim.counters.reset()
    requeue = reconcile_train_job(ns, "waits")  # the cache has seen none of the writes: nothing is done
    assert requeue is not None
    assert sim.counters.total() == 0
    cache.catch_up()
    assert reconcile_train_job(ns, "waits") is None
    assert sorted(pods(sim, ns)) == ["waits-node-0-0", "waits-node-0-1"]


def test_a_stale_cached_trainjob_is_caught_by_the_status_precondition_and_read_again_once(sim, ns, cache):
    sim.store.create(train_job("stale", ns, "torch-distributed", trainer={"numNodes": 2}))
    cache.catch_up()
    reconcile_train_job(ns, "stale")
    sim.store.wait_idle()
    created = {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()}
    sim.advance(1)  # the pods run: the status must change, from a TrainJob the cache holds an old copy of
    sim.store.wait_idle()
    cache.runtime.expectations.clear()  # the events of the first run never reach the cache

    sim.counters.reset()
    reconcile_train_job(ns, "stale")
    sim.store.wait_idle()

    assert sim.counters.count(verb="patch", code=409) + sim.counters.count(verb="update", code=409) == 1
    assert sim.counters.by_verb()["get trainjobs.trainer.kubeflow.org"] == 1
    assert {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()} == created
    assert jobs_status(get_train_job(sim, ns, "stale"))["node"]["active"] == 1
