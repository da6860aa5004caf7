"""Objects for the tests: workflow pods, jobs and their children, shaped as the API server returns them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import fields
from jobs.crd import JAXJOB, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB

JOB_CRDS = (TFJOB, MXJOB, PYTORCHJOB, XGBOOSTJOB, JAXJOB, PADDLEJOB, MPIJOB)
START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
HOUR = 3600
DAY = 24 * HOUR


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_status(phase: str, finished_at: datetime | None = None) -> fields.RawDict:
    """A pod's status as the kubelet writes it: terminated containers carry finishedAt."""
    status: fields.RawDict = {"phase": phase}
    if finished_at is not None:
        status["containerStatuses"] = [
            {
                "name": "main",
                "state": {
                    "terminated": {
                        "exitCode": 0 if phase == "Succeeded" else 1,
                        "finishedAt": stamp(finished_at),
                    }
                },
            }
        ]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "main", "state": {"running": {"startedAt": stamp(START)}}}]
    return status


def pod(
    name: str,
    namespace: str = "default",
    *,
    labels: dict[str, str] | None = None,
    status: fields.RawDict | None = None,
    owner: fields.RawDict | None = None,
) -> fields.RawDict:
    metadata: fields.RawDict = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    manifest: fields.RawDict = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    if status is not None:
        manifest["status"] = status
    return manifest


def workflow_pod(
    name: str,
    namespace: str = "default",
    *,
    phase: str = "Succeeded",
    finished_ago: float | None = None,
    now: datetime = START,
    workflow: str = "wf",
    extra_labels: dict[str, str] | None = None,
) -> fields.RawDict:
    """A pod of Argo workflow `workflow` that finished `finished_ago` seconds before `now`."""
    finished_at = None if finished_ago is None else now - timedelta(seconds=finished_ago)
    labels = {"workflows.argoproj.io/workflow": workflow, **(extra_labels or {})}
    return pod(name, namespace, labels=labels, status=pod_status(phase, finished_at))


def job(
    kind: str, name: str, namespace: str = "default", *, clean_pod_policy: str | None = None
) -> fields.RawDict:
    spec_key = {
        "TFJob": "tfReplicaSpecs",
        "MXJob": "mxReplicaSpecs",
        "PyTorchJob": "pytorchReplicaSpecs",
        "XGBoostJob": "xgbReplicaSpecs",
        "JAXJob": "jaxReplicaSpecs",
        "PaddleJob": "paddleReplicaSpecs",
    }[kind]
    spec: fields.RawDict = {
        spec_key: {
            "Worker": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "main", "image": "trainer"}]}},
            }
        }
    }
    if clean_pod_policy is not None:
        spec["runPolicy"] = {"cleanPodPolicy": clean_pod_policy}
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def finished_job_status(finished_at: datetime, condition: str = "Succeeded") -> fields.RawDict:
    time = stamp(finished_at)
    return {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "Created", "lastTransitionTime": time},
            {"type": condition, "status": "True", "reason": condition, "lastTransitionTime": time},
        ],
        "completionTime": time,
    }


def controller_reference(job_object: fields.RawDict) -> fields.RawDict:
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": job_object["kind"],
        "name": job_object["metadata"]["name"],
        "uid": job_object["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def service(
    name: str, namespace: str = "default", *, labels: dict[str, str], owner: fields.RawDict | None
) -> fields.RawDict:
    metadata: fields.RawDict = {"name": name, "namespace": namespace, "labels": labels}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"clusterIP": "None", "ports": [{"name": "port", "port": 2222}]},
    }


def put(store: Any, obj: fields.RawDict) -> fields.RawDict:
    """Create `obj` in the store with its status (a create alone drops status, as the API server does)."""
    obj = copy.deepcopy(obj)
    status = obj.pop("status", None)
    namespace = obj["metadata"].get("namespace")
    if namespace:
        store.ensure_namespace(namespace)
    created = store.create(obj)
    if status is None:
        return created
    created["status"] = status
    return store.update_status(created)


def install_job_crds(store: Any) -> None:
    for crd in JOB_CRDS:
        store.create(crd.manifest())
