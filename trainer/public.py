"""Kubeflow Trainer's public ConfigMap, `kubeflow-trainer-public`, with the Role and RoleBinding that let
every authenticated user read it, as Trainer's manifests install them in its namespace. Kubeflow's SDK
(`TrainerClient`'s `verify_backend`) reads `data.kubeflow_trainer_version` there and warns when it is missing.

The chart renders the same objects (templates/trainer-public.yaml, with trainer.installCRDs); this is what
`manage.py install_trainer_public` applies where no chart runs (`make run`)."""

from __future__ import annotations

from typing import Any

from kube.client import KubeClient
from kube.errors import AlreadyExists
from kube.resources import CONFIGMAP, NAMESPACE, ROLE, ROLE_BINDING, ResourceType
from trainer import constants as c

LABELS = {"app.kubernetes.io/part-of": "argoml", "app.kubernetes.io/component": "trainer-public"}
RBAC = "rbac.authorization.k8s.io"


def manifests(namespace: str = c.SYSTEM_NAMESPACE) -> list[dict[str, Any]]:
    """The namespace, the ConfigMap, and the read-only Role bound to `system:authenticated`."""
    metadata = {"name": c.PUBLIC_CONFIGMAP, "namespace": namespace, "labels": LABELS}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": {c.PUBLIC_VERSION_KEY: c.SERVED_TRAINER_VERSION},
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": metadata,
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": [c.PUBLIC_CONFIGMAP],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": metadata,
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": c.PUBLIC_CONFIGMAP},
            "subjects": [{"kind": "Group", "apiGroup": RBAC, "name": "system:authenticated"}],
        },
    ]


TYPES: dict[str, ResourceType] = {
    "Namespace": NAMESPACE,
    "ConfigMap": CONFIGMAP,
    "Role": ROLE,
    "RoleBinding": ROLE_BINDING,
}


def install(client: KubeClient, namespace: str = c.SYSTEM_NAMESPACE) -> list[str]:
    """Create what is missing and bring the ConfigMap's version up to date; returns what was done."""
    done = []
    for manifest in manifests(namespace):
        rtype, name = TYPES[manifest["kind"]], manifest["metadata"]["name"]
        shown = f"{manifest['kind'].lower()}/{name}"
        try:
            client.create(rtype, manifest, manifest["metadata"].get("namespace"))
            done.append(f"{shown} created")
            continue
        except AlreadyExists:
            pass
        if manifest["kind"] == "ConfigMap":
            client.patch(rtype, name, {"data": manifest["data"]}, namespace)
            done.append(f"{shown} configured")
        else:
            done.append(f"{shown} unchanged")
    return done
