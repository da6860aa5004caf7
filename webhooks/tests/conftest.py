"""AdmissionReviews as the apiserver sends them, and the objects our webhooks see in them."""

from __future__ import annotations

import base64
import copy
import itertools
import json
from typing import Any

import pytest

from kubesim.patch import json_patch
from webhooks import rulecache

_uids = itertools.count(1)

GVK = {
    "TFJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "TFJob"},
    "PyTorchJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "PyTorchJob"},
    "MXJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "MXJob"},
    "XGBoostJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "XGBoostJob"},
    "JAXJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "JAXJob"},
    "PaddleJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "PaddleJob"},
    "MPIJob": {"group": "argoml.io", "version": "v1alpha1", "kind": "MPIJob"},
    "HyperparamWorkflow": {"group": "argoml.io", "version": "v1alpha1", "kind": "HyperparamWorkflow"},
    "Workflow": {"group": "argoproj.io", "version": "v1alpha1", "kind": "Workflow"},
    "WorkflowTemplate": {"group": "argoproj.io", "version": "v1alpha1", "kind": "WorkflowTemplate"},
    "CronWorkflow": {"group": "argoproj.io", "version": "v1alpha1", "kind": "CronWorkflow"},
    "Pod": {"group": "", "version": "v1", "kind": "Pod"},
    "ConfigMap": {"group": "", "version": "v1", "kind": "ConfigMap"},
}


def admission_review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    kind: str | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    group_version: tuple[str, str] | None = None,
    **request: Any,
) -> dict[str, Any]:
    """An AdmissionReview v1 request for `obj` (or `old` on DELETE), shaped like the apiserver's;
    `group_version` overrides the kind's own (a TFJob as Kubeflow's `kubeflow.org`, `v1`)."""
    subject = obj if obj is not None else old
    assert subject is not None, "a review is about an object"
    metadata = subject.get("metadata", {})
    kind = kind or subject["kind"]
    gvk = dict(GVK[kind])
    if group_version is not None:
        gvk["group"], gvk["version"] = group_version
    body = {
        "uid": f"705ab4f5-6393-11e8-b7cc-{next(_uids):012d}",
        "kind": dict(gvk),
        "resource": {"group": gvk["group"], "version": gvk["version"], "resource": "x"},
        "requestKind": dict(gvk),
        "name": metadata.get("name", ""),
        "namespace": namespace if namespace is not None else metadata.get("namespace", "ml"),
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
        **request,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def decoded_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON Patch of an AdmissionReview response (empty when it carries none)."""
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


def patched(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """`obj` as the apiserver stores it after applying the response's patch (with kubesim's RFC 6902)."""
    return json_patch(copy.deepcopy(obj), decoded_patch(response))


def container(name: str = "tensorflow", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "example/train:1", **fields}


def tf_job(name: str = "mnist", namespace: str = "ml", **replica_specs: Any) -> dict[str, Any]:
    """A TFJob; `Worker=...` style keywords replace the default 1 Chief + 2 Workers."""
    specs = replica_specs or {
        "Chief": {"replicas": 1, "template": {"spec": {"containers": [container()]}}},
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [container()]}}},
    }
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"tfReplicaSpecs": specs},
    }


def mpi_job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    """An MPIJob of a launcher and 2 workers, Worker `replicas` left out when `workers=None`."""
    workers: dict[str, Any] = {"template": {"spec": {"containers": [container("mpi")]}}}
    if spec.pop("workers", 2) is not None:
        workers["replicas"] = 2
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"template": {"spec": {"containers": [container("mpi")]}}},
                "Worker": workers,
            },
            **spec,
        },
    }


def pytorch_job(name: str = "resnet", **replica_specs: Any) -> dict[str, Any]:
    specs = replica_specs or {
        "Master": {"replicas": 1, "template": {"spec": {"containers": [container("pytorch")]}}},
        "Worker": {"replicas": 3, "template": {"spec": {"containers": [container("pytorch")]}}},
    }
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"pytorchReplicaSpecs": specs},
    }


TRAIN_TEMPLATE: dict[str, Any] = {
    "name": "train",
    "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}]},
    "outputs": {"parameters": [{"name": "loss", "valueFrom": {"path": "/tmp/loss"}}]},
    "container": {
        "image": "python:3.11",
        "command": ["python", "train.py"],
        "args": ["--lr={{inputs.parameters.lr}}", "--batch-size={{inputs.parameters.batch-size}}"],
    },
}


def hyperparam_workflow(name: str = "mnist-sweep", workflow: dict[str, Any] | None = None) -> dict[str, Any]:
    """A valid 3x2 grid sweep over `train`, or over `workflow` when given."""
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "HyperparamWorkflow",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "workflow": workflow or {"entrypoint": "train", "templates": [copy.deepcopy(TRAIN_TEMPLATE)]},
            "hyperparams": [
                {"name": "lr", "values": [0.1, 0.01, 0.001]},
                {"name": "batch-size", "values": [32, 64]},
            ],
            "objective": {"metric": "loss", "goal": "minimize"},
        },
    }


def argo_workflow(templates: list[dict[str, Any]] | None = None, entrypoint: str = "main") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "hello-", "namespace": "ml"},
        "spec": {
            "entrypoint": entrypoint,
            "templates": templates
            or [{"name": "main", "container": {"image": "busybox", "command": ["echo", "hello"]}}],
        },
    }


def pod(labels: dict[str, str] | None = None, namespace: str = "ml", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "train-", "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


@pytest.fixture(autouse=True)
def fresh_rule_cache():
    """Each test starts with a process cache that holds nothing yet."""
    rulecache.reset_process_cache()
    yield
    rulecache.reset_process_cache()
