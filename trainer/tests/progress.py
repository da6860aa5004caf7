"""A cluster where TrainJobs run and their pods hold tokens, as the progress endpoint's tests need: kubesim
with authentication (TokenRequest, TokenReview), a TrainJob CRD with the status subresource, and pods made
as the plan makes them (labels and controller reference)."""

from __future__ import annotations

import uuid
from typing import Any

from kube.client import get_client
from kube.resources import POD
from kubesim.errors import ApiError
from kubesim.simulator import Simulator
from trainer import constants as c
from trainer.progress import server as progress_server
from trainer.progress.reporting import TRAIN_JOB

ACCOUNT = "trainer"
# Trainer's CRD, cut down to what the endpoint writes: the status subresource and trainerStatus's limits.
TRAIN_JOB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainjobs.trainer.kubeflow.org"},
    "spec": {
        "group": c.GROUP,
        "names": {
            "kind": "TrainJob",
            "listKind": "TrainJobList",
            "plural": "trainjobs",
            "singular": "trainjob",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                                "properties": {
                                    "trainerStatus": {
                                        "type": "object",
                                        "properties": {
                                            "progressPercentage": {
                                                "type": "integer",
                                                "minimum": 0,
                                                "maximum": 100,
                                            },
                                            "estimatedRemainingSeconds": {"type": "integer", "minimum": 0},
                                            "metrics": {
                                                "type": "array",
                                                "maxItems": 256,
                                                "items": {
                                                    "type": "object",
                                                    "properties": {
                                                        "name": {"type": "string", "maxLength": 64},
                                                        "value": {"type": "string", "maxLength": 64},
                                                    },
                                                },
                                            },
                                            "lastUpdatedTime": {"type": "string", "format": "date-time"},
                                        },
                                    }
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def prepare(sim: Simulator) -> str:
    """The CRD (once), and a namespace of this test's own with the pods' ServiceAccount; its name."""
    try:
        sim.store.create(TRAIN_JOB_CRD)
    except ApiError as error:
        if error.code != 409:
            raise
    return namespace(sim)


def namespace(sim: Simulator) -> str:
    name = f"ml-{uuid.uuid4().hex[:8]}"
    sim.store.ensure_namespace(name)
    sim.store.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": name}}
    )
    return name


def train_job(namespace: str, name: str, pods: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A TrainJob with the status its controller writes before any pod, and `pods` pods of its trainer
    step, created through the API."""
    client = get_client()
    job = client.create(
        TRAIN_JOB,
        {"apiVersion": c.API_VERSION, "kind": c.TRAIN_JOB_KIND, "metadata": {"name": name}, "spec": {}},
        namespace,
    )
    job = client.patch(TRAIN_JOB, name, {"status": {"jobsStatus": []}}, namespace, subresource="status")
    owner = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAIN_JOB_KIND,
        "name": name,
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    created = [
        client.create(POD, pod(namespace, f"{name}-node-0-{index}", {c.LABEL_JOBSET_NAME: name}, [owner]))
        for index in range(pods)
    ]
    return job, created


def pod(namespace: str, name: str, labels: dict[str, str], owners: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": owners},
        "spec": {"serviceAccountName": ACCOUNT, "containers": [{"name": "node", "image": "trainer:test"}]},
    }


def token(namespace: str, pod_name: str | None, audience: str, expiration: int = 3600) -> str:
    """A projected token as the kubelet gets it for a pod's volume: TokenRequest bound to the pod."""
    spec: dict[str, Any] = {"audiences": [audience], "expirationSeconds": expiration}
    if pod_name is not None:
        spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": pod_name}
    answer = get_client().request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    return str(answer["status"]["token"])


def job_token(namespace: str, job: str, pod_name: str | None) -> str:
    return token(namespace, pod_name, progress_server.token_audience(namespace, job))
