"""Watch events of jobs and of their pods become TrainingJob, history and Replica rows (the mirror)."""

from __future__ import annotations

import copy
import threading
from datetime import UTC, datetime

import pytest

from jobs.controllers import job_resource
from jobs.frameworks import TensorFlow
from jobs.models import Replica, TrainingJob, TrainingJobHistory
from jobs.tests.cluster import install_crds
from kube.controller.mirror import Action, apply_event
from kube.controller.queue import ObjectKey
from kube.controller.registry import registry
from kube.controller.runtime import ControllerRuntime
from kube.resources import POD
from kube.tests.controller_harness import client_for
from kube.tests.queue_harness import wait_for
from kubesim.testing import running_simulator

pytestmark = pytest.mark.django_db


def condition(type_: str, reason: str, at: str, status: str = "True", message: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


def tfjob(rv: str, *conditions: dict, name: str = "mnist", uid: str = "job-uid", kind: str = "TFJob") -> dict:
    status = {
        "conditions": list(conditions),
        "replicaStatuses": {"Worker": {"active": 3, "succeeded": 0, "failed": 0}, "PS": {"active": 2}},
        "startTime": "2026-05-01T09:00:01Z",
        "restarts": 1,
    } if conditions else {}  # fmt: skip
    spec_key = {"TFJob": "tfReplicaSpecs", "MXJob": "mxReplicaSpecs"}[kind]
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": rv,
            "generation": 1,
            "creationTimestamp": "2026-05-01T09:00:00Z",
        },
        "spec": {spec_key: {"PS": {"replicas": 2}, "Worker": {"replicas": 4}}},
        "status": status,
    }


def pod(name: str, rv: str, *, uid: str = "pod-uid", owner_uid: str = "job-uid", **status: object) -> dict:
    replica_type, index = name.split("-")[-2:]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "resourceVersion": rv,
            "labels": {
                "argoml.io/job-name": "mnist",
                "argoml.io/replica-type": replica_type,
                "argoml.io/replica-index": index,
            },
            "ownerReferences": [
                {
                    "apiVersion": "argoml.io/v1alpha1",
                    "kind": "TFJob",
                    "name": "mnist",
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": "tensorflow", "image": "tf"}]},
        "status": status,
    }


CREATED = condition("Created", "TFJobCreated", "2026-05-01T09:00:00Z")
RUNNING = condition(
    "Running", "TFJobRunning", "2026-05-01T09:00:02Z", message="TFJob team-a/mnist is running."
)


def test_a_job_event_fills_the_row_with_its_kind_state_summary_and_times():
    apply_event(TrainingJob, "ADDED", tfjob("1", CREATED, RUNNING))
    job = TrainingJob.objects.get()
    assert (job.kind, job.namespace, job.name, job.phase) == ("TFJob", "team-a", "mnist", "Running")
    assert job.state_reason == "TFJobRunning"
    assert job.state_message == "TFJob team-a/mnist is running."
    assert job.replica_summary == "PS 2/2 · Worker 3/4 running"  # computed: no replicaSummary written
    assert job.restarts == 1
    assert job.start_time == datetime(2026, 5, 1, 9, 0, 1, tzinfo=UTC)
    assert job.completion_time is None


def test_each_transition_is_one_history_row_and_the_summary_the_operator_wrote_wins():
    apply_event(TrainingJob, "ADDED", tfjob("1", CREATED))
    running = tfjob("2", CREATED, RUNNING)
    running["status"]["replicaSummary"] = "written by the operator"
    apply_event(TrainingJob, "MODIFIED", running)
    apply_event(TrainingJob, "MODIFIED", running)  # a duplicate changes nothing

    history = list(TrainingJobHistory.objects.values_list("phase", "reason"))
    assert history == [("Created", "TFJobCreated"), ("Running", "TFJobRunning")]
    assert TrainingJob.objects.get().replica_summary == "written by the operator"


def test_a_tfjob_and_an_mxjob_may_share_a_name():
    apply_event(TrainingJob, "ADDED", tfjob("1", name="same", uid="tf"))
    apply_event(TrainingJob, "ADDED", tfjob("2", name="same", uid="mx", kind="MXJob"))
    assert sorted(TrainingJob.objects.filter(deleted_at=None).values_list("kind", flat=True)) == [
        "MXJob",
        "TFJob",
    ]


def test_a_tfjob_of_each_group_may_share_a_name_and_each_row_knows_its_group():
    apply_event(TrainingJob, "ADDED", tfjob("1", name="same", uid="ours"))
    apply_event(
        TrainingJob, "ADDED", {**tfjob("2", name="same", uid="kubeflow"), "apiVersion": "kubeflow.org/v1"}
    )
    live = {job.uid: (job.api_group, job.api_version) for job in TrainingJob.objects.filter(deleted_at=None)}
    assert live == {
        "ours": ("argoml.io", "argoml.io/v1alpha1"),
        "kubeflow": ("kubeflow.org", "kubeflow.org/v1"),
    }


def test_a_new_job_taking_a_name_retires_only_the_old_job_of_its_own_kind():
    apply_event(TrainingJob, "ADDED", tfjob("1", name="same", uid="tf-old"))
    apply_event(TrainingJob, "ADDED", tfjob("2", name="same", uid="mx", kind="MXJob"))
    apply_event(TrainingJob, "ADDED", tfjob("3", name="same", uid="tf-new"))  # the delete event was missed

    live = dict(TrainingJob.objects.filter(deleted_at=None).values_list("uid", "kind"))
    assert live == {"mx": "MXJob", "tf-new": "TFJob"}


def test_a_pod_event_fills_its_replica_row_even_before_the_job_row_exists():
    running = pod(
        "mnist-worker-2",
        "5",
        phase="Running",
        podIP="10.0.0.7",
        containerStatuses=[{"name": "tensorflow", "restartCount": 2, "state": {"running": {}},
                            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
    )  # fmt: skip
    assert apply_event(Replica, "ADDED", running) == Action.INSERT
    apply_event(TrainingJob, "ADDED", tfjob("1", CREATED))

    replica = Replica.objects.select_related("job").get()
    assert replica.job.name == "mnist"
    assert (replica.replica_type, replica.replica_index, replica.name) == ("worker", 2, "mnist-worker-2")
    assert (replica.phase, replica.restarts, replica.exit_code) == ("Running", 2, 137)
    assert (replica.node, replica.pod_ip) == ("node-1", "10.0.0.7")
    assert (replica.spec, replica.status) == ({}, {})  # the pod's spec and status stay in the cluster


def test_a_failed_pod_keeps_its_exit_code_and_message_and_a_recreated_one_is_a_new_row():
    failed = pod(
        "mnist-worker-0",
        "5",
        uid="first",
        phase="Failed",
        containerStatuses=[{"name": "tensorflow", "state": {"terminated": {"exitCode": 1, "reason": "Error",
                                                                           "message": "loss is NaN"}}}],
    )  # fmt: skip
    apply_event(Replica, "ADDED", failed)
    apply_event(Replica, "DELETED", failed)
    apply_event(Replica, "ADDED", pod("mnist-worker-0", "9", uid="second", phase="Pending"))

    rows = list(
        Replica.objects.order_by("id").values_list("uid", "phase", "exit_code", "message", "deleted_at")
    )
    assert rows[0][:4] == ("first", "Failed", 1, "Error: loss is NaN")
    assert rows[0][4] is not None
    assert rows[1][:3] == ("second", "Pending", None)


# -- the watch loops route each pod to the one controller that owns it ----------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_runtime_mirrors_each_pod_once_through_the_controller_of_its_owners_kind():
    controllers = [c for c in registry.controllers() if c.kind in ("TFJob", "MXJob", "PyTorchJob")]
    with running_simulator() as sim:
        install_crds(sim)
        client = client_for(sim.kubeconfig_path)
        keys: list[ObjectKey] = []
        lock = threading.Lock()

        def enqueue(kind: str, namespace: str, name: str) -> None:
            with lock:
                keys.append(ObjectKey(kind, namespace, name))

        runtime = ControllerRuntime(client, controllers, enqueue=enqueue)
        runtime.start()
        try:
            assert runtime.wait_synced(10)
            sim.store.ensure_namespace("team-a")
            for manifest in (pod("mnist-worker-0", "", uid=""), mx_pod()):
                body = copy.deepcopy(manifest)
                for field in ("uid", "resourceVersion"):
                    body["metadata"].pop(field)
                client.create(POD, body, "team-a")
            mirrored = Replica.objects.filter(namespace="team-a")
            wait_for(lambda: mirrored.count() == 2, 10, "both pods mirrored")
        finally:
            runtime.stop()
            runtime.join(5)

    assert sorted(mirrored.values_list("name", "job_id")) == [
        ("mnist-worker-0", "job-uid"),
        ("tune-server-0", "mx-uid"),
    ]
    assert set(keys) == {ObjectKey("TFJob", "team-a", "mnist"), ObjectKey("MXJob", "team-a", "tune")}
    assert job_resource(TensorFlow).path("team-a") == "/apis/argoml.io/v1alpha1/namespaces/team-a/tfjobs"


def mx_pod() -> dict:
    manifest = pod("tune-server-0", "", uid="", owner_uid="mx-uid")
    manifest["metadata"]["labels"]["argoml.io/job-name"] = "tune"
    manifest["metadata"]["ownerReferences"][0].update(kind="MXJob", name="tune")
    return manifest
