"""Sweeps as users write them, for the hyperparam tests."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest

TRAIN_TEMPLATE: dict[str, Any] = {
    "name": "train",
    "inputs": {"parameters": [{"name": "lr"}, {"name": "batch-size"}, {"name": "epochs", "default": "3"}]},
    "outputs": {"parameters": [{"name": "loss", "valueFrom": {"path": "/tmp/loss"}}]},
    "container": {
        "image": "python:3.11",
        "command": ["python", "train.py"],
        "args": ["--lr={{inputs.parameters.lr}}", "--batch-size={{inputs.parameters.batch-size}}"],
    },
}


def make_spec(**overrides: Any) -> dict[str, Any]:
    """A valid 3x4 grid sweep over `train`; keyword arguments replace top-level spec fields."""
    spec: dict[str, Any] = {
        "workflow": {
            "entrypoint": "train",
            "arguments": {"parameters": [{"name": "dataset", "value": "mnist"}]},
            "templates": [copy.deepcopy(TRAIN_TEMPLATE)],
        },
        "hyperparams": [
            {"name": "lr", "range": {"min": 0.1, "max": 0.3, "step": 0.1}},
            {"name": "batch-size", "values": [16, 32, 64, 128]},
        ],
        "objective": {"metric": "loss", "goal": "minimize"},
        "parallelism": 4,
    }
    spec.update(overrides)
    return spec


def make_hpw(
    spec: dict[str, Any] | None = None, name: str = "mnist-sweep", uid: str = "0b9f-uid"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "team-a"}
    if uid:
        metadata["uid"] = uid
    return {
        "apiVersion": "argoml.io/v1alpha1",
        "kind": "HyperparamWorkflow",
        "metadata": metadata,
        "spec": spec if spec is not None else make_spec(),
    }


@pytest.fixture
def spec() -> dict[str, Any]:
    return make_spec()


@pytest.fixture
def hpw() -> dict[str, Any]:
    return make_hpw()


# -- a cluster: kubesim as the configured cluster, with our CRD and Argo's Workflow CRD ------------------

WORKFLOW_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "workflows.argoproj.io"},
    "spec": {
        "group": "argoproj.io",
        "names": {"kind": "Workflow", "listKind": "WorkflowList", "plural": "workflows",
                  "singular": "workflow", "shortNames": ["wf"]},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                # Argo's own CRD keeps spec and status unvalidated, and has no status subresource.
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}  # fmt: skip


def install_crds(client: Any) -> None:
    """Our HyperparamWorkflow CRD, and Argo's Workflow CRD unless the simulator serves it already."""
    from hyperparam.crd import HYPERPARAM_WORKFLOW
    from kube.crds.install import install
    from kube.errors import AlreadyExists
    from kube.resources import CRD

    install(client, [HYPERPARAM_WORKFLOW])
    with contextlib.suppress(AlreadyExists):
        client.create(CRD, WORKFLOW_CRD)


@pytest.fixture
def cluster(settings):
    """kubesim as the configured cluster (`get_client()`, the event recorder and kubectl talk to it)."""
    from kube.client import get_client, reset_client
    from kube.events import recorder_for
    from kubesim.testing import running_simulator

    with running_simulator() as simulator:
        settings.KUBECONFIG = str(simulator.kubeconfig_path)
        settings.KUBE_IN_CLUSTER = False
        reset_client()
        install_crds(get_client())
        simulator.store.ensure_namespace("team-a")
        yield simulator
        recorder_for("hyperparamworkflow").flush()
    reset_client()
