"""Collections against the simulator with a frozen clock, real PostgreSQL and real Redis."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

import pytest
from django.db import connection
from prometheus_client import REGISTRY

from garbage.collector import Collection, JobIndex, collect, load_rules
from garbage.lock import RunLock, redis_client
from garbage.models import GCDeletion, GCNamespacePolicy, GCRun
from garbage.policy import JobState, Owner, Reason, Verdict
from kube.client import get_client
from kube.resources import POD

from .factories import (
    DAY,
    HOUR,
    controller_reference,
    finished_job_status,
    install_job_crds,
    job,
    pod,
    pod_status,
    put,
    service,
    workflow_pod,
)

pytestmark = pytest.mark.django_db


def names(sim, resource: str = "pods", namespace: str | None = None) -> set[str]:
    return {item["metadata"]["name"] for item in sim.store.list(resource, namespace)["items"]}


def deleted(run: GCRun) -> dict[str, str]:
    return {f"{d.namespace}/{d.name}": d.reason for d in run.deletions.all()}


def deletions_metric(reason: str) -> float:
    return REGISTRY.get_sample_value("argoml_gc_deletions_total", {"reason": reason}) or 0.0


@pytest.fixture
def mixed_pods(cluster, gc_settings):
    """Two old finished workflow pods, and six that must stay: young, running, pending, unlabelled."""
    now = cluster.clock.now()
    for manifest in (
        workflow_pod("old-succeeded", finished_ago=2 * HOUR, now=now),
        workflow_pod("old-failed", phase="Failed", finished_ago=2 * DAY, now=now),
        workflow_pod("young-succeeded", finished_ago=HOUR - 60, now=now),
        workflow_pod("young-failed", phase="Failed", finished_ago=2 * HOUR, now=now),
        workflow_pod("running", phase="Running", now=now),
        workflow_pod("pending", phase="Pending", now=now),
        pod("unlabelled", status=pod_status("Succeeded", now.replace(year=2020))),
        workflow_pod("no-finish-time", finished_ago=None, now=now),
    ):
        put(cluster.store, manifest)
    return cluster


def test_old_pods_of_finished_workflows_are_deleted_and_the_rest_kept(mixed_pods):
    succeeded_before = deletions_metric("workflow_succeeded")
    run = collect(now=mixed_pods.clock.now)

    assert run.status == GCRun.Status.SUCCEEDED
    assert names(mixed_pods) == {"young-succeeded", "young-failed", "running", "pending", "unlabelled",
                                 "no-finish-time"}  # fmt: skip
    assert deleted(run) == {
        "default/old-succeeded": "workflow_succeeded",
        "default/old-failed": "workflow_failed",
    }
    # The apiserver filters out pending and running pods; the unlabelled one is never listed.
    assert (run.scanned, run.deleted, run.skipped, run.errors) == (5, 2, 3, 0)
    assert run.skip_reasons == {"within_retention": 2, "finish_time_unknown": 1}
    assert run.finished is not None
    assert deletions_metric("workflow_succeeded") == succeeded_before + 1


def test_each_deletion_is_recorded_with_uid_and_age(mixed_pods):
    uid = mixed_pods.store.get("pods", "old-succeeded", "default")["metadata"]["uid"]
    run = collect(now=mixed_pods.clock.now)
    row = run.deletions.get(name="old-succeeded")
    assert (row.kind, row.uid, row.age_seconds, row.already_gone) == ("Pod", uid, 2 * HOUR, False)


def test_a_pod_becomes_garbage_once_the_clock_passes_its_retention(mixed_pods):
    collect(now=mixed_pods.clock.now)
    mixed_pods.clock.advance(60)
    run = collect(now=mixed_pods.clock.now)
    assert deleted(run) == {"default/young-succeeded": "workflow_succeeded"}


def test_a_dry_run_deletes_nothing_but_reports_the_same(mixed_pods):
    before = names(mixed_pods)
    dry = collect(dry_run=True, now=mixed_pods.clock.now)
    assert names(mixed_pods) == before
    assert mixed_pods.counters.count(verb="delete") == 0
    real = collect(now=mixed_pods.clock.now)
    assert dry.dry_run
    assert not real.dry_run
    assert deleted(dry) == deleted(real)
    assert (dry.scanned, dry.deleted, dry.skipped) == (real.scanned, real.deleted, real.skipped)


def test_a_dry_run_counts_no_deletions_in_the_metrics(mixed_pods):
    before = deletions_metric("workflow_failed")
    collect(dry_run=True, now=mixed_pods.clock.now)
    assert deletions_metric("workflow_failed") == before


def test_namespace_overrides_apply(cluster, gc_settings):
    now = cluster.clock.now()
    for namespace in ("default", "fast", "precious"):
        put(cluster.store, workflow_pod("done", namespace, finished_ago=10 * 60, now=now))
        put(
            cluster.store,
            workflow_pod("done-long-ago", namespace, phase="Failed", finished_ago=30 * DAY, now=now),
        )
    GCNamespacePolicy.objects.create(namespace="fast", succeeded_retention_seconds=5 * 60)
    GCNamespacePolicy.objects.create(namespace="precious", excluded=True)

    run = collect(now=cluster.clock.now)

    assert deleted(run) == {
        "default/done-long-ago": "workflow_failed",
        "fast/done": "workflow_succeeded",
        "fast/done-long-ago": "workflow_failed",
    }
    assert names(cluster, namespace="precious") == {"done", "done-long-ago"}
    assert run.skip_reasons == {"namespace_excluded": 2, "within_retention": 1}


def test_allow_and_deny_lists_apply(cluster, gc_settings):
    now = cluster.clock.now()
    for namespace in ("team-a", "team-b", "research"):
        put(cluster.store, workflow_pod("done", namespace, finished_ago=DAY, now=now))
    gc_settings.GC_NAMESPACES_ALLOW = ["team-*"]
    gc_settings.GC_NAMESPACES_DENY = ["team-b"]
    run = collect(now=cluster.clock.now)
    assert deleted(run) == {"team-a/done": "workflow_succeeded"}


def test_a_run_limited_to_a_namespace_lists_only_that_namespace(cluster, gc_settings):
    now = cluster.clock.now()
    for namespace in ("team-a", "team-b"):
        put(cluster.store, workflow_pod("done", namespace, finished_ago=DAY, now=now))
    run = collect(namespace="team-a", now=cluster.clock.now)
    assert run.namespace == "team-a"
    assert deleted(run) == {"team-a/done": "workflow_succeeded"}
    assert names(cluster, namespace="team-b") == {"done"}
    assert cluster.counters.count(route="GET /api/v1/pods") == 0


def test_a_bad_namespace_is_refused_before_anything_runs(cluster, gc_settings):
    with pytest.raises(ValueError, match="namespace"):
        collect(namespace="Not_A_Namespace")
    assert not GCRun.objects.exists()


def test_lists_are_paged_with_label_selectors(cluster, gc_settings):
    gc_settings.GC_PAGE_SIZE = 5
    now = cluster.clock.now()
    for index in range(12):
        put(cluster.store, workflow_pod(f"old-{index:02}", finished_ago=DAY, now=now))
    run = collect(now=cluster.clock.now)
    assert run.deleted == 12
    pod_lists = cluster.counters.count(verb="list", resource="pods")
    # 3 pages of workflow pods, then one (empty) page of job pods.
    assert pod_lists == 4
    assert cluster.counters.count(verb="delete", resource="pods") == 12


# --- one failure does not stop a run ------------------------------------------------------------


def injecting(sim, at_call: int, inject: Callable[[], None]) -> Callable[[], datetime]:
    """A `now` for the collector that runs `inject` on its n-th call: once per page, so mid-run."""
    calls = 0

    def now() -> datetime:
        nonlocal calls
        calls += 1
        if calls == at_call:
            inject()
        return sim.clock.now()

    return now


@pytest.fixture
def many_old_pods(cluster, gc_settings):
    gc_settings.GC_PAGE_SIZE = 4
    now = cluster.clock.now()
    for index in range(12):
        put(cluster.store, workflow_pod(f"old-{index:02}", finished_ago=DAY, now=now))
    return cluster


def test_a_transient_429_and_500_mid_run_are_retried_and_the_run_finishes(many_old_pods):
    def faults() -> None:
        many_old_pods.faults.fail(500, verb="list", resource="pods")
        many_old_pods.faults.fail(429, verb="delete", resource="pods", retry_after=0)

    run = collect(now=injecting(many_old_pods, 2, faults))
    assert run.status == GCRun.Status.SUCCEEDED
    assert run.deleted == 12
    assert names(many_old_pods) == set()
    assert many_old_pods.counters.count(verb="delete", code=429) == 1
    assert many_old_pods.counters.count(verb="list", code=500) == 1


def test_a_deletion_that_keeps_failing_is_recorded_and_the_run_finishes_the_rest(many_old_pods):
    def faults() -> None:
        many_old_pods.faults.fail(500, verb="delete", path="/pods/old-05$", times=None)

    run = collect(now=injecting(many_old_pods, 2, faults))
    assert run.status == GCRun.Status.PARTIAL
    assert (run.deleted, run.errors) == (11, 1)
    assert names(many_old_pods) == {"old-05"}
    assert run.failures[0]["what"] == "delete Pod default/old-05"
    assert run.failures[0]["status"] == 500
    assert run.failures[0]["namespace"] == "default"  # the dashboard shows it to that namespace only
    assert "old-05" not in {d.name for d in run.deletions.all()}


def test_a_listing_that_keeps_failing_stops_that_pass_only(many_old_pods):
    install_job_crds(many_old_pods.store)
    tfjob = put(many_old_pods.store, job("TFJob", "gone-soon"))
    orphan = service("gone-soon-worker-0", labels={"argoml.io/job-name": "gone-soon"},
                     owner=controller_reference(tfjob))  # fmt: skip
    put(many_old_pods.store, orphan)
    many_old_pods.store.delete("tfjobs.argoml.io", "gone-soon", "default", propagation="Orphan")

    def faults() -> None:
        many_old_pods.faults.fail(500, verb="list", resource="pods", path="^/api/v1/pods$", times=None)

    run = collect(now=injecting(many_old_pods, 1, faults))
    assert run.status == GCRun.Status.PARTIAL
    # Both pod passes list /api/v1/pods: the workflow pass after its first page, the job pass at once.
    assert [failure["what"] for failure in run.failures] == ["list workflow pods", "list job pods"]
    assert {failure["namespace"] for failure in run.failures} == {""}  # cluster-wide: superusers only
    assert run.errors == 2
    assert run.deleted == 5  # the first page of 4, then the orphaned service
    assert deleted(run)["default/gone-soon-worker-0"] == "orphan"


def test_an_expired_continue_token_starts_the_list_again(many_old_pods):
    run = collect(now=injecting(many_old_pods, 2, lambda: many_old_pods.clock.advance(301)))
    assert run.status == GCRun.Status.SUCCEEDED
    assert run.deleted == 12
    assert many_old_pods.counters.count(verb="list", code=410) == 1


def test_a_pod_already_gone_counts_as_done(many_old_pods):
    def faults() -> None:
        many_old_pods.faults.fail(404, verb="delete", path="/pods/old-05$")

    run = collect(now=injecting(many_old_pods, 1, faults))
    assert run.status == GCRun.Status.SUCCEEDED
    assert run.deleted == 12
    assert run.deletions.get(name="old-05").already_gone


def test_a_newer_pod_that_took_the_name_is_never_deleted(cluster, gc_settings):
    now = cluster.clock.now()
    stale = put(cluster.store, workflow_pod("reused", finished_ago=DAY, now=now))
    cluster.store.delete("pods", "reused", "default")
    newer = put(cluster.store, workflow_pod("reused", phase="Running", now=now))
    run = GCRun.objects.create()
    collection = Collection(run, get_client(), load_rules(), cluster.clock.now)
    collection.handle(POD, stale, Verdict(True, Reason.WORKFLOW_SUCCEEDED, DAY))
    collection.flush()
    assert cluster.store.get("pods", "reused", "default")["metadata"]["uid"] == newer["metadata"]["uid"]
    assert run.deletions.get().already_gone


# --- one run at a time -----------------------------------------------------------------------------


def test_a_run_exits_at_once_while_another_holds_the_lock(mixed_pods):
    holder = RunLock(redis_client(), 60)
    assert holder.acquire()
    run = collect(now=mixed_pods.clock.now)
    assert run.status == GCRun.Status.SKIPPED
    assert "lock" in run.note
    assert mixed_pods.counters.count(verb="delete") == 0
    assert mixed_pods.counters.count(verb="list") == 0
    holder.release()


@pytest.mark.django_db(transaction=True)
def test_two_overlapping_runs_never_both_delete(mixed_pods):
    """The first run pauses after its first page; a second one starts meanwhile and must do nothing."""
    paused, resume = threading.Event(), threading.Event()
    results: dict[str, GCRun] = {}

    def pausing_now() -> datetime:
        paused.set()
        resume.wait(10)
        return mixed_pods.clock.now()

    def first() -> None:
        try:
            results["first"] = collect(now=pausing_now)
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert paused.wait(10)
    results["second"] = collect(now=mixed_pods.clock.now)
    resume.set()
    thread.join(10)

    assert results["second"].status == GCRun.Status.SKIPPED
    assert results["first"].status == GCRun.Status.SUCCEEDED
    assert results["first"].deleted == 2
    assert mixed_pods.counters.count(verb="delete") == 2
    assert GCDeletion.objects.count() == 2


def test_a_run_that_lost_its_lock_stops_before_deleting(mixed_pods, lock_key):
    """Paused past its TTL, the first run's lock went to a second run; the first must not delete."""
    ticks = iter([0.0, 1000.0, 1000.0])  # acquired at 0; the next check comes after the pause
    lock = RunLock(redis_client(), 60, monotonic=lambda: next(ticks))
    second: dict[str, GCRun] = {}

    def now_after_a_long_pause() -> datetime:
        redis_client().delete(lock_key)  # the TTL ran out in Redis
        second["run"] = collect(now=mixed_pods.clock.now)
        return mixed_pods.clock.now()

    first = collect(now=now_after_a_long_pause, lock=lock)
    assert first.status == GCRun.Status.FAILED
    assert "lock" in first.note
    assert first.deleted == 0
    assert second["run"].deleted == 2
    assert mixed_pods.counters.count(verb="delete") == 2


# --- children of our jobs --------------------------------------------------------------------------


@pytest.fixture
def jobs_cluster(cluster, gc_settings):
    install_job_crds(cluster.store)
    return cluster


def make_job(sim, kind: str, name: str, *, policy: str | None, finished: bool) -> dict:
    created = put(sim.store, job(kind, name, clean_pod_policy=policy))
    if finished:
        created["status"] = finished_job_status(sim.clock.now())
        created = sim.store.update_status(created)
    return created


def make_children(sim, owner: dict, *, phases: tuple[str, ...] = ("Succeeded",)) -> None:
    name = owner["metadata"]["name"]
    labels = {"argoml.io/job-name": name}
    for index, phase in enumerate(phases):
        child = f"{name}-worker-{index}"
        finished_at = sim.clock.now() if phase in ("Succeeded", "Failed") else None
        put(sim.store, pod(child, labels=labels, status=pod_status(phase, finished_at),
                           owner=controller_reference(owner)))  # fmt: skip
        put(sim.store, service(child, labels=labels, owner=controller_reference(owner)))


def test_children_a_finished_job_asked_to_clean_are_deleted(jobs_cluster):
    sim = jobs_cluster
    make_children(sim, make_job(sim, "TFJob", "clean-all", policy="All", finished=True),
                  phases=("Succeeded", "Failed", "Running"))  # fmt: skip
    make_children(sim, make_job(sim, "PyTorchJob", "keep", policy="None", finished=True))
    make_children(sim, make_job(sim, "MXJob", "still-running", policy="All", finished=False))

    run = collect(now=sim.clock.now)

    assert sorted((d.kind, d.name) for d in run.deletions.all()) == [
        ("Pod", "clean-all-worker-0"),
        ("Pod", "clean-all-worker-1"),
        ("Service", "clean-all-worker-0"),
        ("Service", "clean-all-worker-1"),
        ("Service", "clean-all-worker-2"),
    ]
    assert {d.reason for d in run.deletions.all()} == {"job_clean_pod_policy"}
    assert names(sim) == {"clean-all-worker-2", "keep-worker-0", "still-running-worker-0"}
    assert names(sim, "services") == {"keep-worker-0", "still-running-worker-0"}
    assert run.skip_reasons == {"clean_pod_policy_keeps": 2, "job_not_finished": 2}


@pytest.mark.parametrize("kind", ["XGBoostJob", "JAXJob", "PaddleJob"])
def test_children_of_every_job_kind_are_judged_by_their_job_never_as_orphans(jobs_cluster, kind):
    sim = jobs_cluster
    make_children(sim, make_job(sim, kind, "running", policy="All", finished=False))
    make_children(sim, make_job(sim, kind, "done", policy="All", finished=True))

    run = collect(now=sim.clock.now)

    assert {d.reason for d in run.deletions.all()} == {"job_clean_pod_policy"}
    assert names(sim) == names(sim, "services") == {"running-worker-0"}
    assert run.skip_reasons == {"job_not_finished": 2}


def test_children_whose_job_no_longer_exists_are_deleted(jobs_cluster):
    sim = jobs_cluster
    vanished = {
        "kind": "TFJob",
        "metadata": {"name": "vanished", "uid": "0b6c1f8e-5d0e-4e8a-9d62-3c1b2f7a9e10"},
    }
    make_children(sim, vanished, phases=("Failed", "Succeeded", "Running"))
    # Deleted with propagation Orphan: the apiserver strips the ownerReferences; the label remains.
    make_children(sim, make_job(sim, "MXJob", "orphaned", policy="None", finished=False))
    sim.store.delete("mxjobs.argoml.io", "orphaned", "default", propagation="Orphan")

    run = collect(now=sim.clock.now)

    assert deleted(run) == {
        "default/vanished-worker-0": "orphan",
        "default/vanished-worker-1": "orphan",
        "default/vanished-worker-2": "orphan",
        "default/orphaned-worker-0": "orphan",
    }
    assert run.deletions.count() == 7  # 4 services, 3 finished pods
    assert names(sim) == {"vanished-worker-2"}  # running: never deleted
    assert names(sim, "services") == set()
    # Each absence was confirmed once and remembered: `vanished` by its uid, `orphaned` by name in each kind.
    assert sim.counters.count(verb="get", resource="tfjobs.argoml.io") == 2
    assert sim.counters.count(verb="get", resource="mxjobs.argoml.io") == 1


def test_an_ownerless_child_of_an_existing_job_is_kept(jobs_cluster):
    sim = jobs_cluster
    make_job(sim, "PyTorchJob", "exists", policy="All", finished=True)
    put(sim.store, service("exists-worker-9", labels={"argoml.io/job-name": "exists"}, owner=None))
    run = collect(now=sim.clock.now)
    assert run.deleted == 0
    assert run.skip_reasons == {"not_controlled": 1}


def test_a_job_created_after_the_jobs_were_listed_is_found_before_calling_its_child_an_orphan(jobs_cluster):
    sim = jobs_cluster
    owner = make_job(sim, "TFJob", "late", policy="None", finished=True)
    run = GCRun.objects.create(dry_run=True)
    collection = Collection(run, get_client(), load_rules(), sim.clock.now)
    child = service("late-worker-0", labels={"argoml.io/job-name": "late"}, owner=controller_reference(owner))
    found = collection.owner_of(child, JobIndex())
    assert isinstance(found, JobState)
    assert (found.name, found.clean_pod_policy, found.finished) == ("late", "None", True)


def test_without_our_crds_job_children_are_left_alone(cluster, gc_settings):
    owner = {"kind": "TFJob", "metadata": {"name": "t", "uid": "8d5e4a2c-0000-0000-0000-000000000000"}}
    put(
        cluster.store,
        service("t-worker-0", labels={"argoml.io/job-name": "t"}, owner=controller_reference(owner)),
    )
    run = collect(now=cluster.clock.now)
    assert run.status == GCRun.Status.SUCCEEDED
    assert run.deleted == 0
    assert run.skip_reasons == {"owner_unknown": 1}
    assert names(cluster, "services", "default") >= {"t-worker-0"}


def test_children_of_a_kubeflow_v1_job_are_never_taken_for_orphans(jobs_cluster):
    """They carry our job-name label, and no argoml.io job of that name exists: without the owner's group
    they would look orphaned and be deleted while their job runs."""
    owner = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "kf", "uid": "5f0c2a3e-0000-0000-0000-000000000000"},
    }
    reference = {**controller_reference(owner), "apiVersion": "kubeflow.org/v1"}
    put(jobs_cluster.store, service("kf-worker-0", labels={"argoml.io/job-name": "kf"}, owner=reference))
    run = collect(now=jobs_cluster.clock.now)
    assert run.deleted == 0
    assert run.skip_reasons == {"owner_unknown": 1}


def test_a_job_pod_that_is_also_a_workflow_pod_is_judged_once(jobs_cluster):
    sim = jobs_cluster
    owner = make_job(sim, "TFJob", "both", policy="All", finished=True)
    both = workflow_pod("both-worker-0", finished_ago=10, now=sim.clock.now(),
                        extra_labels={"argoml.io/job-name": "both"})  # fmt: skip
    both["metadata"]["ownerReferences"] = [controller_reference(owner)]
    put(sim.store, both)
    run = collect(now=sim.clock.now)
    assert run.scanned == 1
    assert run.skip_reasons == {"within_retention": 1}


def test_an_owner_that_cannot_be_read_is_unknown_and_the_error_recorded(jobs_cluster):
    sim = jobs_cluster
    sim.faults.fail(500, verb="get", resource="tfjobs", times=None)
    run = GCRun.objects.create(dry_run=True)
    collection = Collection(run, get_client(), load_rules(), sim.clock.now)
    owner = {"kind": "TFJob", "metadata": {"name": "t", "uid": "u"}}
    child = service("t-worker-0", labels={"argoml.io/job-name": "t"}, owner=controller_reference(owner))
    assert collection.owner_of(child, JobIndex()) is Owner.UNKNOWN
    assert collection.tally.errors == 1
