"""The resource types our code talks to, how each one is addressed on the API server, and how a child names
the object that controls it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ResourceType:
    """An API resource: `apiVersion` ("v1" or "group/version"), kind, plural, and whether it is namespaced."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path, e.g. /apis/argoml.io/v1alpha1/namespaces/ns/tfjobs/name/status."""
        base = f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


NAMESPACE = ResourceType("v1", "Namespace", "namespaces", namespaced=False)
POD = ResourceType("v1", "Pod", "pods")
SERVICE = ResourceType("v1", "Service", "services")
CONFIGMAP = ResourceType("v1", "ConfigMap", "configmaps")
SECRET = ResourceType("v1", "Secret", "secrets")
SERVICE_ACCOUNT = ResourceType("v1", "ServiceAccount", "serviceaccounts")
EVENT = ResourceType("events.k8s.io/v1", "Event", "events")
DEPLOYMENT = ResourceType("apps/v1", "Deployment", "deployments")
LEASE = ResourceType("coordination.k8s.io/v1", "Lease", "leases")
CRD = ResourceType(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False
)
VALIDATING_WEBHOOK_CONFIGURATION = ResourceType(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
MUTATING_WEBHOOK_CONFIGURATION = ResourceType(
    "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False
)
WORKFLOW = ResourceType("argoproj.io/v1alpha1", "Workflow", "workflows")


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """The ownerReference a controller puts on each child: deleting the owner deletes the child (and waits
    for it, blockOwnerDeletion), and only the owner's controller manages it (controller)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
