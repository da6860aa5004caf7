"""Helpers of the tests that run against the simulator: our CRDs and Argo's Workflow CRD, workflows
stored as Argo leaves them once they ran, and short readers of what the cluster holds."""

from __future__ import annotations

from typing import Any

from argoml_site.crds import CUSTOM_RESOURCES, TRAINER_RESOURCES
from kubesim.errors import ApiError
from kubesim.simulator import Simulator

# Argo's own CRD is schemaless (x-kubernetes-preserve-unknown-fields) and has no status subresource, so a
# workflow stored with its status is exactly what Argo's controller would have written.
WORKFLOW_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "workflows.argoproj.io"},
    "spec": {
        "group": "argoproj.io",
        "names": {
            "kind": "Workflow",
            "listKind": "WorkflowList",
            "plural": "workflows",
            "singular": "workflow",
            "shortNames": ["wf"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def install_crds(sim: Simulator) -> None:
    """Every CRD of ours, Kubeflow Trainer's (a TrainJob is a source too) and Argo's Workflow CRD, unless
    the simulator serves them already."""
    resources = (*CUSTOM_RESOURCES, *TRAINER_RESOURCES)
    for manifest in [*(resource.manifest() for resource in resources), WORKFLOW_CRD]:
        try:
            sim.store.create(manifest)
        except ApiError as error:
            if error.code != 409:
                raise


def store_workflow(sim: Simulator, workflow: dict[str, Any]) -> dict[str, Any]:
    """The workflow as Argo leaves it once it ran (status included)."""
    sim.store.ensure_namespace(workflow["metadata"]["namespace"])
    return sim.store.create(workflow)


def get(sim: Simulator, resource: str, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return sim.store.get(resource, name, namespace)
    except ApiError as error:
        if error.code == 404:
            return None
        raise


def tensorboard(sim: Simulator, name: str, namespace: str) -> dict[str, Any] | None:
    return get(sim, "tensorboards.argoml.io", name, namespace)


def children(sim: Simulator, name: str, namespace: str) -> tuple[dict | None, dict | None]:
    """(Deployment, Service) of the Tensorboard `name`."""
    from tensorboard.manifests import child_name

    return get(sim, "deployments.apps", child_name(name), namespace), get(
        sim, "services", child_name(name), namespace
    )


def event_reasons(sim: Simulator, namespace: str, name: str) -> list[str]:
    """Reasons of the events.k8s.io Events about the object `name`, oldest first."""
    events = sim.store.list("events.events.k8s.io", namespace)["items"]
    mine = [e for e in events if e["regarding"]["name"] == name]
    return [e["reason"] for e in sorted(mine, key=lambda e: int(e["metadata"]["resourceVersion"]))]
