"""Reconciles that read the leader's informer cache: no API reads while the cache is current, and the same
converged cluster (no duplicate child, no lost write) when the cache lags behind the API server.

The runtime's informers are driven by hand here: `relist()` brings a cache up to date at a moment the test
chooses, and between relists the cache lags as far behind as the test wants (a paused informer).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from types import SimpleNamespace

import pytest
from django.test.utils import override_settings

from jobs import conf
from jobs.controllers import job_resource
from jobs.frameworks import framework_class
from jobs.manifests import LABEL_JOB_NAME
from jobs.reconcile import reconcile_job
from jobs.tests.cluster import get_job, install_crds, job_manifest, pods, services, state_of
from kube.client import get_client, reset_client
from kube.controller import cachedview, runtime
from kube.controller.registry import Controller, Owns
from kube.resources import POD, SERVICE, ResourceType
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

T0 = datetime(2026, 5, 1, 9, 0, 0, tzinfo=UTC)
_namespaces = count(1)


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        mp = pytest.MonkeyPatch()
        mp.setattr(conf, "now", simulator.clock.now)
        with override_settings(
            KUBECONFIG=str(simulator.kubeconfig_path),
            KUBE_IN_CLUSTER=False,
            KUBE_WRITE_QPS=10_000.0,
            KUBE_WRITE_BURST=10_000,
        ):
            reset_client()
            yield simulator
        mp.undo()
        reset_client()


@pytest.fixture
def ns(sim: Simulator) -> str:
    name = f"cache-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


class PausedRuntime:
    """The TFJob controller's informers in this process, as the leader has them, caught up only on demand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # The registered controller without its mirrors (no database here).
        controller = Controller(
            _job_type(),
            (Owns(POD, label_selector=LABEL_JOB_NAME), Owns(SERVICE, label_selector=LABEL_JOB_NAME)),
        )
        self.runtime = runtime.ControllerRuntime(get_client(), [controller], enqueue=lambda *key: None)
        monkeypatch.setattr(
            runtime, "_active_manager", SimpleNamespace(runtime=self.runtime, pid=os.getpid())
        )

    def catch_up(self) -> None:
        """What the watches would have delivered by now (and, like any relist, a fresh start)."""
        for informer in self.runtime.informers.values():
            informer.relist()

    @property
    def view(self) -> cachedview.CachedView:
        view = self.runtime.view("TFJob")
        assert view is not None
        return view


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch) -> PausedRuntime:
    return PausedRuntime(monkeypatch)


def reads_of_a_run(sim: Simulator, namespace: str, name: str) -> int:
    """The API reads (get, list) one reconcile of the job made."""
    sim.counters.reset()
    reconcile_job("TFJob", namespace, name)
    sim.store.wait_idle()
    return sum(n for verb, n in sim.counters.by_verb().items() if verb.split()[0] in ("get", "list"))


def test_a_current_cache_serves_every_read_of_a_job_from_submission_to_running(sim, ns, cache):
    sim.store.create(job_manifest("TFJob", {"Worker": 2}, name="quiet", namespace=ns))
    cache.catch_up()

    assert reads_of_a_run(sim, ns, "quiet") == 0
    assert sorted(pods(sim, ns)) == ["quiet-worker-0", "quiet-worker-1"]
    cache.catch_up()
    assert reads_of_a_run(sim, ns, "quiet") == 0
    sim.advance(1)  # the kubelet starts the pods
    sim.store.wait_idle()
    cache.catch_up()
    assert reads_of_a_run(sim, ns, "quiet") == 0

    assert state_of(get_job(sim, "TFJob", ns, "quiet")) == "Running"


def test_a_run_waits_for_the_events_of_its_own_writes_instead_of_deciding_from_a_cache_without_them(
    sim, ns, cache
):
    sim.store.create(job_manifest("TFJob", {"Worker": 2}, name="waits", namespace=ns))
    cache.catch_up()
    before = sim.store.resource_version
    reconcile_job("TFJob", ns, "waits")
    sim.counters.reset()

    # The cache has seen neither the status nor the 4 children just written: the next run does nothing.
    requeue = reconcile_job("TFJob", ns, "waits")
    assert requeue is not None
    assert requeue > 1
    assert sim.counters.total() == 0

    # Watch events arrive one by one; a run once the last one is in decides, from a complete view.
    view = cache.view
    for child in [*pods(sim, ns).values(), *services(sim, ns).values()]:
        assert view.waiting(ns, "waits") is not None
        cache.runtime.informers[_spec_of(cache, child["kind"])].apply({"type": "ADDED", "object": child})
    statuses = sim.store.watch("tfjobs.argoml.io", ns, resource_version=before).take(timeout=0)
    # runPolicy defaulted (the manifest has none), then the one status: Created, counting the pods.
    assert [event for event, _ in statuses] == ["MODIFIED", "MODIFIED"]
    for event, job in statuses:
        assert view.waiting(ns, "waits") is not None
        cache.runtime.informers[_spec_of(cache, "TFJob")].apply({"type": event, "object": job})
    assert view.waiting(ns, "waits") is None
    assert reconcile_job("TFJob", ns, "waits") is None
    # It decides from the complete view: no child again, no read, no write (the status counts the pods).
    assert sim.counters.by_verb() == {}


def test_a_cache_minutes_behind_its_writes_makes_runs_wait_not_create_again_nor_read(
    sim, ns, cache, monkeypatch
):
    """A busy leader's informers may be thousands of events behind: what a run wrote is expected until
    the cache shows it, however long that takes, so no run meanwhile creates a child twice (409) or
    writes a status from a stale job (Conflict, then fresh reads)."""
    monotonic = [1000.0]
    monkeypatch.setattr(cache.runtime.expectations, "_clock", lambda: monotonic[0])
    sim.store.create(job_manifest("TFJob", {"Worker": 3}, name="behind", namespace=ns))
    cache.catch_up()
    reconcile_job("TFJob", ns, "behind")
    sim.store.wait_idle()
    created = {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()}
    assert len(created) == 3

    for _ in range(4):  # events of other jobs trigger runs of this key while its own are still queued
        monotonic[0] += 60
        sim.counters.reset()
        requeue = reconcile_job("TFJob", ns, "behind")
        assert requeue is not None
        assert requeue > 0
        assert sim.counters.total() == 0  # no create, no status write, no read

    cache.catch_up()
    assert cache.view.waiting(ns, "behind") is None
    sim.counters.reset()
    assert reconcile_job("TFJob", ns, "behind") is None
    sim.store.wait_idle()
    assert sim.counters.by_verb() == {}  # the first run's status counted the pods it created
    assert get_job(sim, "TFJob", ns, "behind")["status"]["replicaStatuses"]["Worker"]["active"] == 3
    assert {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()} == created


def test_a_stale_job_in_the_cache_is_caught_by_the_status_precondition_and_read_again_once(sim, ns, cache):
    # With its runPolicy, as the webhook stores it: the status write is the first write of the second run.
    manifest = job_manifest(
        "TFJob", {"Worker": 2}, name="stale", namespace=ns, run_policy={"cleanPodPolicy": "All"}
    )
    sim.store.create(manifest)
    cache.catch_up()
    reconcile_job("TFJob", ns, "stale")
    sim.store.wait_idle()
    created = {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()}
    # The events of that run never reach the cache (a paused informer), and the expectations expire.
    cache.runtime.expectations.clear()
    sim.counters.reset()

    assert reconcile_job("TFJob", ns, "stale") is None
    sim.store.wait_idle()

    calls = sim.counters.by_verb()
    # The cached job had no status, so the run took it for new: its creates found every child there (409),
    # and its status write was refused (409); then one read of the job and its children, and the status
    # decided from them is the one stored (the first run counted the pods it created). Nothing was made
    # twice, and no condition event of the stale copy was recorded.
    assert sim.counters.count(verb="update", code=409) == 1
    assert calls["update tfjobs.argoml.io/status"] == 1
    assert calls["get tfjobs.argoml.io"] == 1
    assert calls["list pods"] == 1
    assert calls["list services"] == 1
    assert sim.counters.count(verb="create", resource="pods", code=409) == 2
    assert sim.counters.count(verb="create", resource="services", code=409) == 2
    assert not [verb for verb in calls if verb.startswith("create") and "events" in verb]
    assert {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()} == created


def test_stale_children_in_the_cache_never_make_a_second_pod(sim, ns, cache):
    sim.store.create(job_manifest("TFJob", {"Worker": 3}, name="dup", namespace=ns))
    cache.catch_up()
    reconcile_job("TFJob", ns, "dup")
    sim.store.wait_idle()
    created = {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()}
    # The job's informer caught up, the pods' and services' did not, and the expectations expired.
    job = get_job(sim, "TFJob", ns, "dup")
    cache.runtime.informers[_spec_of(cache, "TFJob")].apply({"type": "MODIFIED", "object": job})
    cache.runtime.expectations.clear()

    for _ in range(3):
        reconcile_job("TFJob", ns, "dup")
        sim.store.wait_idle()

    assert {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()} == created
    assert len(services(sim, ns)) == 3
    cache.catch_up()
    reconcile_job("TFJob", ns, "dup")
    sim.store.wait_idle()
    assert state_of(get_job(sim, "TFJob", ns, "dup")) == "Created"
    assert {name: pod["metadata"]["uid"] for name, pod in pods(sim, ns).items()} == created


def test_a_job_deleted_while_the_cache_still_shows_it_ends_the_run_quietly(sim, ns, cache):
    sim.store.create(job_manifest("TFJob", {"Worker": 1}, name="gone", namespace=ns))
    cache.catch_up()
    sim.store.delete("tfjobs.argoml.io", "gone", ns)
    sim.store.wait_idle()

    assert reconcile_job("TFJob", ns, "gone") is None
    assert pods(sim, ns) == {}


def _spec_of(cache: PausedRuntime, kind: str) -> runtime.WatchSpec:
    return next(spec for spec in cache.runtime.informers if spec.rtype.kind == kind)


def _job_type() -> ResourceType:
    return job_resource(framework_class("TFJob"))


def test_a_forked_process_never_reads_the_copy_of_the_cache_it_inherited(sim, ns, cache, monkeypatch):
    cache.catch_up()
    assert runtime.cached_view("TFJob") is not None
    monkeypatch.setattr(runtime.os, "getpid", lambda: -1)  # what a pool process forked later would see
    assert runtime.cached_view("TFJob") is None
