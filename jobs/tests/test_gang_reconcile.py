"""Gang scheduling through the reconcile loop, in this process, against kubesim with the PodGroup CRDs of
Volcano and scheduler-plugins installed (vendored under jobs/tests/crds/). The test plays the gang
scheduler where one acts: it moves a Volcano PodGroup to Inqueue, as Volcano does when the gang fits.
(The same through a real Celery worker and its watches is in test_gang_operator.py.)"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest
from django.test.utils import override_settings

from jobs import conf
from jobs.reconcile import reconcile_job
from jobs.tests.cluster import (
    event_reasons,
    events_about,
    get_job,
    install_crds,
    install_pod_group_crds,
    job_manifest,
    live_pods,
    pods,
    state_of,
)
from kube.client import reset_client
from kube.controller.children import POD_GROUP_RETRY_SECONDS
from kubesim.errors import ApiError
from kubesim.simulator import Simulator
from kubesim.testing import running_simulator

T0 = datetime(2026, 5, 2, 9, 0, 0, tzinfo=UTC)
POD_GROUPS = {
    "volcano": "podgroups.scheduling.volcano.sh",
    "scheduler-plugins": "podgroups.scheduling.x-k8s.io",
}
_namespaces = count(1)


@contextlib.contextmanager
def operator_on(simulator: Simulator) -> Iterator[None]:
    """The reconcile loop of this process talks to `simulator` and reads its clock."""
    mp = pytest.MonkeyPatch()
    mp.setattr(conf, "now", simulator.clock.now)
    with override_settings(
        KUBECONFIG=str(simulator.kubeconfig_path),
        KUBE_IN_CLUSTER=False,
        KUBE_WRITE_QPS=10_000.0,
        KUBE_WRITE_BURST=10_000,
    ):
        reset_client()
        yield
    mp.undo()
    reset_client()


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as simulator:
        install_crds(simulator)
        install_pod_group_crds(simulator)
        with operator_on(simulator):
            yield simulator


@pytest.fixture(params=["volcano", "scheduler-plugins"])
def scheduler(request) -> Iterator[str]:
    with override_settings(JOBS_GANG_SCHEDULER=request.param, JOBS_GANG_SCHEDULER_NAME=""):
        yield request.param


@pytest.fixture
def ns(sim: Simulator) -> str:
    name = f"gang-{next(_namespaces)}"
    sim.store.ensure_namespace(name)
    return name


def pod_group(sim: Simulator, scheduler: str, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return sim.store.get(POD_GROUPS[scheduler], name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


def fingerprint(sim: Simulator, namespace: str, name: str) -> tuple:
    job = get_job(sim, "TFJob", namespace, name)
    objects = [*pods(sim, namespace).values()]
    for resource in POD_GROUPS.values():
        objects += sim.store.list(resource, namespace)["items"]
    return (
        job and job["metadata"]["resourceVersion"],
        sorted((o["metadata"]["uid"], o["metadata"]["resourceVersion"]) for o in objects),
    )


def settle(sim: Simulator, namespace: str, name: str) -> float | None:
    """Reconcile until a run changes nothing; returns the last requested requeue."""
    for _ in range(10):
        before = fingerprint(sim, namespace, name)
        requeue = reconcile_job("TFJob", namespace, name)
        sim.store.wait_idle()
        if fingerprint(sim, namespace, name) == before:
            return requeue
    raise AssertionError(f"TFJob {namespace}/{name} keeps changing")


def admit(sim: Simulator, namespace: str, name: str) -> None:
    """What Volcano does once the whole gang fits: the PodGroup leaves Pending for Inqueue."""
    group = sim.store.get(POD_GROUPS["volcano"], name, namespace)
    sim.store.update({**group, "status": {"phase": "Inqueue"}})


def start(sim: Simulator, scheduler: str, manifest: dict[str, Any]) -> None:
    """Submit the job and let it start: under Volcano, admit its PodGroup once it exists."""
    namespace, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
    sim.store.create(manifest)
    settle(sim, namespace, name)
    if scheduler == "volcano":
        assert pods(sim, namespace) == {}, "Volcano has not admitted the group: no pods yet"
        admit(sim, namespace, name)
        settle(sim, namespace, name)


def set_requests(manifest: dict[str, Any], replica_type: str, requests: dict[str, Any]) -> None:
    """Requests, and the limits an extended resource must have equal to them (the API server refuses a
    pod requesting `nvidia.com/gpu` without: "Limit must be set for non overcommitable resources")."""
    template = manifest["spec"]["tfReplicaSpecs"][replica_type]["template"]
    limits = {name: amount for name, amount in requests.items() if "/" in name}
    resources = {"requests": requests, **({"limits": limits} if limits else {})}
    template["spec"]["containers"][0]["resources"] = resources


def scale(sim: Simulator, namespace: str, name: str, workers: int) -> None:
    patch = {"spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers}}}}
    sim.store.patch("tfjobs.argoml.io", name, patch, namespace=namespace)
    settle(sim, namespace, name)


# -- tests -------------------------------------------------------------------------------------------
def test_the_pod_group_comes_first_and_every_pod_joins_it(sim, scheduler, ns):
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 2}, name="mnist", namespace=ns)
    set_requests(manifest, "Chief", {"cpu": "1"})
    set_requests(manifest, "Worker", {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1})
    pod_watch, group_watch = sim.store.watch("pods", ns), sim.store.watch(POD_GROUPS[scheduler], ns)
    start(sim, scheduler, manifest)

    job = get_job(sim, "TFJob", ns, "mnist")
    group = pod_group(sim, scheduler, ns, "mnist")
    assert group is not None
    [owner] = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "TFJob",
        "mnist",
        job["metadata"]["uid"],
        True,
    )
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "5", "memory": "8Gi", "nvidia.com/gpu": "2"}
    assert set(pods(sim, ns)) == {"mnist-chief-0", "mnist-worker-0", "mnist-worker-1"}
    for pod in pods(sim, ns).values():
        metadata = pod["metadata"]
        if scheduler == "volcano":
            assert group["spec"]["queue"] == "default"
            assert pod["spec"]["schedulerName"] == "volcano"
            assert metadata["annotations"]["scheduling.k8s.io/group-name"] == "mnist"
            assert metadata["annotations"]["volcano.sh/task-spec"] == metadata["name"].split("-")[1]
        else:
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert metadata["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist"
    # Creation order, from the watches: kubesim's resourceVersions count the store's writes.
    group_added = [int(obj["metadata"]["resourceVersion"]) for t, obj in group_watch.take(0) if t == "ADDED"]
    pods_added = [int(obj["metadata"]["resourceVersion"]) for t, obj in pod_watch.take(0) if t == "ADDED"]
    assert len(group_added) == 1
    assert len(pods_added) == 3
    assert group_added[0] < min(pods_added)
    assert "SuccessfulCreatePodGroup" in event_reasons(sim, ns, "mnist")


def test_the_pod_group_follows_the_replica_count(sim, scheduler, ns):
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 2}, name="grow", namespace=ns)
    set_requests(manifest, "Worker", {"cpu": "1"})
    start(sim, scheduler, manifest)

    scale(sim, ns, "grow", 4)
    group = pod_group(sim, scheduler, ns, "grow")
    assert (group["spec"]["minMember"], group["spec"]["minResources"]) == (5, {"cpu": "4"})
    assert len(live_pods(sim, ns)) == 5
    assert "SuccessfulUpdatePodGroup" in event_reasons(sim, ns, "grow")

    scale(sim, ns, "grow", 1)
    group = pod_group(sim, scheduler, ns, "grow")
    assert (group["spec"]["minMember"], group["spec"]["minResources"]) == (2, {"cpu": "1"})


def test_a_finished_job_deletes_its_pod_group(sim, scheduler, ns):
    manifest = job_manifest(
        "TFJob",
        {"Chief": 1, "Worker": 1},
        name="done",
        namespace=ns,
        scripts={"Chief": {"duration": 2}, "Worker": {"duration": None}},
    )
    start(sim, scheduler, manifest)
    for _ in range(4):
        sim.advance(1)
        settle(sim, ns, "done")
    assert state_of(get_job(sim, "TFJob", ns, "done")) == "Succeeded"
    assert pod_group(sim, scheduler, ns, "done") is None
    assert ("SuccessfulDeletePodGroup", "Deleted PodGroup: done") in events_about(sim, ns, "done")


def test_suspending_deletes_the_pod_group_and_resuming_brings_it_back(sim, scheduler, ns):
    start(sim, scheduler, job_manifest("TFJob", {"Chief": 1, "Worker": 1}, name="nap", namespace=ns))
    sim.store.patch("tfjobs.argoml.io", "nap", {"spec": {"runPolicy": {"suspend": True}}}, namespace=ns)
    settle(sim, ns, "nap")
    assert pod_group(sim, scheduler, ns, "nap") is None
    assert live_pods(sim, ns) == {}

    sim.store.patch("tfjobs.argoml.io", "nap", {"spec": {"runPolicy": {"suspend": False}}}, namespace=ns)
    settle(sim, ns, "nap")
    assert pod_group(sim, scheduler, ns, "nap") is not None
    if scheduler == "volcano":
        assert live_pods(sim, ns) == {}
        admit(sim, ns, "nap")
        settle(sim, ns, "nap")
    assert set(live_pods(sim, ns)) == {"nap-chief-0", "nap-worker-0"}


def test_deleting_the_job_lets_the_garbage_collector_remove_its_pod_group(sim, scheduler, ns):
    start(sim, scheduler, job_manifest("TFJob", {"Chief": 1}, name="gone", namespace=ns))
    assert pod_group(sim, scheduler, ns, "gone") is not None
    sim.store.delete("tfjobs.argoml.io", "gone", ns)
    sim.store.wait_idle()
    assert pod_group(sim, scheduler, ns, "gone") is None


@pytest.mark.parametrize("scheduler", ["scheduler-plugins"], indirect=True)
def test_priority_classes_decide_which_pods_min_resources_counts(sim, scheduler, ns):
    with contextlib.suppress(ApiError):
        sim.store.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "gang-high"},
                "value": 1000,
            }
        )
    policy = {"schedulingPolicy": {"minAvailable": 2, "scheduleTimeoutSeconds": 120}}
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 3}, name="prio", namespace=ns, run_policy=policy)
    set_requests(manifest, "Chief", {"cpu": "1"})
    set_requests(manifest, "Worker", {"cpu": "2"})
    manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["priorityClassName"] = "gang-high"
    start(sim, scheduler, manifest)
    group = pod_group(sim, scheduler, ns, "prio")
    assert group["spec"] == {"minMember": 2, "minResources": {"cpu": "4"}, "scheduleTimeoutSeconds": 120}


def test_without_a_gang_scheduler_there_is_no_pod_group_and_pods_use_the_default_scheduler(sim, ns):
    with override_settings(JOBS_GANG_SCHEDULER="none"):
        sim.store.create(job_manifest("TFJob", {"Chief": 1, "Worker": 1}, name="plain", namespace=ns))
        settle(sim, ns, "plain")
    for resource in POD_GROUPS.values():
        assert sim.store.list(resource, ns)["items"] == []
    for pod in pods(sim, ns).values():
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})
        assert "scheduling.x-k8s.io/pod-group" not in pod["metadata"]["labels"]


def test_a_missing_pod_group_crd_is_a_warning_on_the_job_and_no_pods_until_it_is_installed():
    with running_simulator(frozen_clock=True, start_time=T0, kubelet=True) as bare:
        install_crds(bare)
        bare.store.ensure_namespace("ml")
        with operator_on(bare), override_settings(JOBS_GANG_SCHEDULER="scheduler-plugins"):
            bare.store.create(job_manifest("TFJob", {"Chief": 1, "Worker": 1}, name="lost", namespace="ml"))
            for _ in range(2):
                assert reconcile_job("TFJob", "ml", "lost") == POD_GROUP_RETRY_SECONDS
            bare.store.wait_idle()
            assert pods(bare, "ml") == {}
            warnings = [
                note for reason, note in events_about(bare, "ml", "lost") if reason == "FailedCreatePodGroup"
            ]
            assert warnings
            assert "the cluster has no podgroups.scheduling.x-k8s.io" in warnings[0]

            install_pod_group_crds(bare)
            assert reconcile_job("TFJob", "ml", "lost") is None
            bare.store.wait_idle()
            assert set(pods(bare, "ml")) == {"lost-chief-0", "lost-worker-0"}
            assert bare.store.get("podgroups.scheduling.x-k8s.io", "lost", "ml")["spec"]["minMember"] == 2


@pytest.mark.parametrize("scheduler", ["volcano"], indirect=True)
def test_a_policy_s_min_resources_queue_and_priority_class_reach_the_pod_group_as_written(sim, scheduler, ns):
    policy = {
        "schedulingPolicy": {
            "minAvailable": 2,
            "queue": "research",
            "priorityClass": "gang-high",
            "minResources": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": "2"},
        }
    }
    manifest = job_manifest("TFJob", {"Chief": 1, "Worker": 2}, name="given", namespace=ns, run_policy=policy)
    start(sim, scheduler, manifest)  # the job passed the CRD's schema: quantities as integers or strings
    assert pod_group(sim, scheduler, ns, "given")["spec"] == {
        "minMember": 2,
        "queue": "research",
        "priorityClassName": "gang-high",
        "minResources": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": "2"},
    }
    assert len(live_pods(sim, ns)) == 3


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"minResources": {"cpu": "lots"}}, "minResources"),
        ({"minAvailable": 0}, "minAvailable"),
        ({"scheduleTimeoutSeconds": -1}, "scheduleTimeoutSeconds"),
    ],
)
def test_the_crds_refuse_a_scheduling_policy_value_of_the_wrong_shape(sim, ns, policy, field):
    manifest = job_manifest(
        "TFJob", {"Chief": 1}, name="bad", namespace=ns, run_policy={"schedulingPolicy": policy}
    )
    with pytest.raises(ApiError) as refused:
        sim.store.create(manifest)
    assert refused.value.code == 422
    assert f"spec.runPolicy.schedulingPolicy.{field}" in str(refused.value)


@pytest.fixture
def faults(sim) -> Iterator[Any]:
    yield sim.faults
    sim.faults.clear()


@pytest.mark.parametrize("scheduler", ["scheduler-plugins"], indirect=True)
def test_a_forbidden_pod_group_is_a_warning_naming_the_grant_and_no_pods(sim, scheduler, ns, faults):
    faults.fail(403, verb="create", resource="podgroups", namespace=ns, times=None)
    sim.store.create(job_manifest("TFJob", {"Chief": 1}, name="denied", namespace=ns))
    assert reconcile_job("TFJob", ns, "denied") == POD_GROUP_RETRY_SECONDS
    sim.store.wait_idle()
    assert pods(sim, ns) == {}
    [note] = [note for reason, note in events_about(sim, ns, "denied") if reason == "FailedCreatePodGroup"]
    assert "the operator may not create podgroups.scheduling.x-k8s.io" in note
    assert "jobs.gangScheduler" in note

    faults.clear()
    assert settle(sim, ns, "denied") is None
    assert set(pods(sim, ns)) == {"denied-chief-0"}


@pytest.mark.parametrize("scheduler", ["scheduler-plugins"], indirect=True)
def test_a_server_error_on_the_pod_group_is_retried_by_the_queue_and_creates_no_pods(
    sim, scheduler, ns, faults
):
    faults.fail(500, verb="create", resource="podgroups", namespace=ns, times=1)
    sim.store.create(job_manifest("TFJob", {"Chief": 1}, name="flaky", namespace=ns))
    with pytest.raises(Exception, match="injected fault"):
        reconcile_job("TFJob", ns, "flaky")
    sim.store.wait_idle()
    assert pods(sim, ns) == {}
    assert "FailedCreatePodGroup" in event_reasons(sim, ns, "flaky")
    settle(sim, ns, "flaky")  # the queue's retry
    assert set(pods(sim, ns)) == {"flaky-chief-0"}
