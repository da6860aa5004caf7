"""The resource types our code talks to, how each one (or a set of them, by label) is addressed on the API
server, and how a child names the object that controls it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidName
from .names import NameFormat, name_problems, namespace_problems


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
        """The URL path, e.g. /apis/argoml.io/v1alpha1/namespaces/ns/tfjobs/name/status.

        No namespace (None or "") means every namespace, or a cluster-scoped kind; no name (None) means the
        collection. Every segment given is checked to be a valid Kubernetes name for what it is, and refused
        with InvalidName before any request exists, so no caller can reach another object, or another
        namespace, through ``..``, ``/`` or ``%2F`` in a name. An empty name is refused too: it would turn
        a read of one object into a list of all of them.
        """
        base = f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"
        parts = [base]
        if self.namespaced and namespace:
            _check_segment("metadata.namespace", namespace, namespace_problems)
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            _check_segment("metadata.name", name, lambda value: name_problems(self.kind, value))
            parts.append(name)
        if subresource is not None:
            if name is None:
                raise InvalidName("subresource", subresource, ["needs the name of an object"])
            _check_segment("subresource", subresource, NameFormat.LABEL.problems)
            parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.kind}.{self.api_version}"


def _check_segment(field: str, value: object, problems_of: Callable[[str], list[str]]) -> None:
    """InvalidName naming `field` when `value` is not a valid name by `problems_of`."""
    problems = (
        problems_of(value) if isinstance(value, str) else [f"must be a string, not {type(value).__name__}"]
    )
    if problems:
        raise InvalidName(field, str(value), problems)


NAMESPACE = ResourceType("v1", "Namespace", "namespaces", namespaced=False)
POD = ResourceType("v1", "Pod", "pods")
SERVICE = ResourceType("v1", "Service", "services")
CONFIGMAP = ResourceType("v1", "ConfigMap", "configmaps")
SECRET = ResourceType("v1", "Secret", "secrets")
SERVICE_ACCOUNT = ResourceType("v1", "ServiceAccount", "serviceaccounts")
PERSISTENT_VOLUME_CLAIM = ResourceType("v1", "PersistentVolumeClaim", "persistentvolumeclaims")
EVENT = ResourceType("events.k8s.io/v1", "Event", "events")
#: The same Events in the older core shape (involvedObject, message, firstTimestamp, count), which
#: client-go's `record` package writes and Kubeflow's SDK reads.
CORE_EVENT = ResourceType("v1", "Event", "events")
DEPLOYMENT = ResourceType("apps/v1", "Deployment", "deployments")
ROLE = ResourceType("rbac.authorization.k8s.io/v1", "Role", "roles")
ROLE_BINDING = ResourceType("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
LEASE = ResourceType("coordination.k8s.io/v1", "Lease", "leases")
HORIZONTAL_POD_AUTOSCALER = ResourceType(
    "autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"
)
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
TOKEN_REVIEW = ResourceType("authentication.k8s.io/v1", "TokenReview", "tokenreviews", namespaced=False)


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


def label_selector(labels: Mapping[str, str]) -> str:
    """The equality-based label selector (`?labelSelector=`) matching every label of `labels`, keys sorted
    as the API server prints one (`a=1,b=2`)."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
