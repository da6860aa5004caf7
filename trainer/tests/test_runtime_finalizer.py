"""The runtime controller against the simulator: `trainer.kubeflow.org/resource-in-use` is on a runtime
exactly while a TrainJob references it, so a runtime in use, once deleted, stays Terminating until its
last TrainJob goes; TrainJob events reconcile the runtime they name."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from kube.client import get_client
from kube.controller import runtime as kube_runtime
from kube.controller.queue import ObjectKey
from kube.controller.registry import ControllerRegistry
from kube.controller.runtime import ControllerRuntime
from kube.errors import NotFound
from kubesim.simulator import Simulator
from trainer import constants as c
from trainer.controllers import runtime_controllers
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME
from trainer.runtimes import finalizer as reconcile
from trainer.runtimes.inuse import RESOURCE_IN_USE_FINALIZER
from trainer.tests.runtime_cluster import job_using, torch_distributed, trainer_cluster


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with trainer_cluster("team-a", "team-b") as simulator:
        yield simulator


def finalizers(rtype: Any, name: str, namespace: str | None = None) -> list[str]:
    return get_client().get(rtype, name, namespace)["metadata"].get("finalizers") or []


def gone(rtype: Any, name: str, namespace: str | None = None) -> bool:
    try:
        get_client().get(rtype, name, namespace)
    except NotFound:
        return True
    return False


def test_a_cluster_runtime_used_by_a_trainjob_gets_the_finalizer(sim):
    client = get_client()
    client.create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")
    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == []

    client.create(TRAIN_JOB, job_using("mnist", "team-a"))
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")

    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == [RESOURCE_IN_USE_FINALIZER]


def test_a_runtime_in_use_stays_terminating_until_its_last_trainjob_is_deleted(sim):
    client = get_client()
    client.create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    client.create(TRAIN_JOB, job_using("one", "team-a"))
    client.create(TRAIN_JOB, job_using("two", "team-b"))
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")

    client.delete(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    terminating = client.get(CLUSTER_TRAINING_RUNTIME, "torch-distributed")
    assert terminating["metadata"].get("deletionTimestamp")

    client.delete(TRAIN_JOB, "one", "team-a")
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")
    assert not gone(CLUSTER_TRAINING_RUNTIME, "torch-distributed")  # "two" still uses it

    client.delete(TRAIN_JOB, "two", "team-b")
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")
    assert gone(CLUSTER_TRAINING_RUNTIME, "torch-distributed")


def test_the_finalizer_goes_when_the_last_trainjob_goes_and_other_finalizers_stay(sim):
    client = get_client()
    runtime = torch_distributed()
    runtime["metadata"]["finalizers"] = ["example.com/audit"]
    client.create(CLUSTER_TRAINING_RUNTIME, runtime)
    client.create(TRAIN_JOB, job_using("mnist", "team-a"))
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")
    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == [
        "example.com/audit",
        RESOURCE_IN_USE_FINALIZER,
    ]

    client.delete(TRAIN_JOB, "mnist", "team-a")
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")

    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == ["example.com/audit"]


def test_a_training_runtime_counts_only_trainjobs_of_its_namespace_that_name_its_kind(sim):
    client = get_client()
    client.create(TRAINING_RUNTIME, torch_distributed(kind=c.TRAINING_RUNTIME, namespace="team-a"))
    client.create(TRAIN_JOB, job_using("elsewhere", "team-b", kind=c.TRAINING_RUNTIME))
    client.create(TRAIN_JOB, job_using("cluster-one", "team-a"))  # the ClusterTrainingRuntime of that name
    reconcile.reconcile_training_runtime("team-a", "torch-distributed")
    assert finalizers(TRAINING_RUNTIME, "torch-distributed", "team-a") == []

    client.create(TRAIN_JOB, job_using("mine", "team-a", kind=c.TRAINING_RUNTIME))
    reconcile.reconcile_training_runtime("team-a", "torch-distributed")

    assert finalizers(TRAINING_RUNTIME, "torch-distributed", "team-a") == [RESOURCE_IN_USE_FINALIZER]


def test_a_runtime_that_does_not_exist_is_nothing_to_do(sim):
    assert reconcile.reconcile_cluster_training_runtime("", "nothing") is None
    assert reconcile.reconcile_training_runtime("team-a", "nothing") is None


def test_a_write_from_a_stale_read_is_refused_and_retried(sim, monkeypatch):
    client = get_client()
    created = client.create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    client.create(TRAIN_JOB, job_using("mnist", "team-a"))
    client.patch(CLUSTER_TRAINING_RUNTIME, "torch-distributed", {"metadata": {"labels": {"touched": "yes"}}})

    class StaleView:
        """A cache still holding the runtime as created (before the label was added)."""

        def get(self, namespace: str, name: str) -> dict:
            return created

        def children(self, kind: str, namespace: str, name: str) -> list:
            return [object()]

    monkeypatch.setattr(reconcile, "cached_view", lambda kind: StaleView())
    delay = reconcile.converge_finalizer(client, CLUSTER_TRAINING_RUNTIME, "", "torch-distributed")
    monkeypatch.undo()

    assert delay == reconcile.CONFLICT_RETRY_SECONDS
    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == []
    reconcile.reconcile_cluster_training_runtime("", "torch-distributed")  # the retry reads afresh
    assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == [RESOURCE_IN_USE_FINALIZER]


# -- TrainJob events reconcile the runtime they name, and the leader's cache answers -----------------------


class Enqueued:
    def __init__(self) -> None:
        self.keys: list[ObjectKey] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, namespace: str, name: str) -> None:
        with self.lock:
            self.keys.append(ObjectKey(kind, namespace, name))


def wait_until(condition: Any, what: str, timeout: float = 5.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def trainer_runtime_controllers() -> list:
    """The runtime controllers as registered, without their mirror (these tests have no database)."""
    return [replace(ctl, mirror=None) for ctl in runtime_controllers()]


def test_trainjob_events_reconcile_the_runtime_they_reference(sim):
    client = get_client()
    enqueued = Enqueued()
    controllers = ControllerRuntime(client, trainer_runtime_controllers(), enqueue=enqueued)
    controllers.start()
    try:
        assert controllers.wait_synced(5)
        client.create(TRAIN_JOB, job_using("uses-cluster", "team-a"))
        client.create(TRAIN_JOB, job_using("uses-own", "team-b", runtime="mine", kind=c.TRAINING_RUNTIME))
        wait_until(lambda: len(enqueued.keys) >= 2, "the keys of both runtimes")
        assert set(enqueued.keys) == {
            ObjectKey(c.CLUSTER_TRAINING_RUNTIME, "", "torch-distributed"),
            ObjectKey(c.TRAINING_RUNTIME, "team-b", "mine"),
        }
        enqueued.keys.clear()
        client.delete(TRAIN_JOB, "uses-own", "team-b")
        wait_until(lambda: enqueued.keys, "the key of the deleted job's runtime")
        assert enqueued.keys == [ObjectKey(c.TRAINING_RUNTIME, "team-b", "mine")]
    finally:
        controllers.stop()
        controllers.join(5)


def test_the_leaders_reconcile_reads_the_trainjobs_of_a_runtime_from_its_cache(sim, monkeypatch):
    client = get_client()
    client.create(CLUSTER_TRAINING_RUNTIME, torch_distributed())
    client.create(TRAIN_JOB, job_using("mnist", "team-a"))
    leading = ControllerRuntime(client, trainer_runtime_controllers(), enqueue=Enqueued())
    leading.start()
    try:
        assert leading.wait_synced(5)
        manager = type("Manager", (), {"runtime": leading, "pid": os.getpid()})()
        monkeypatch.setattr(kube_runtime, "_active_manager", manager)
        lists_before = sim.counters.count(verb="list")
        gets_before = sim.counters.count(verb="get")

        reconcile.reconcile_cluster_training_runtime("", "torch-distributed")

        assert sim.counters.count(verb="list") == lists_before
        assert sim.counters.count(verb="get") == gets_before
        monkeypatch.setattr(kube_runtime, "_active_manager", None)
        assert finalizers(CLUSTER_TRAINING_RUNTIME, "torch-distributed") == [RESOURCE_IN_USE_FINALIZER]
    finally:
        leading.stop()
        leading.join(5)


def test_the_trainer_controllers_are_registered_only_with_trainer_enabled(monkeypatch, settings):
    from trainer import controllers as trainer_controllers

    def registered(on: bool) -> list[str]:
        fresh = ControllerRegistry()
        fresh._discovered = True
        monkeypatch.setattr("kube.controller.registry.register", fresh.register)
        settings.TRAINER_ENABLED = on
        importlib.reload(trainer_controllers)
        return [ctl.kind for ctl in fresh.controllers()]

    try:
        assert registered(False) == []
        assert sorted(registered(True)) == [c.CLUSTER_TRAINING_RUNTIME, c.TRAIN_JOB_KIND, c.TRAINING_RUNTIME]
    finally:  # the module as the process imported it: nothing registered in the real registry
        settings.TRAINER_ENABLED = False
        monkeypatch.undo()
        importlib.reload(trainer_controllers)
