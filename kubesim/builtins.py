"""The built-in kinds the simulator serves, with their printer columns and strategic-merge list keys.

They are stored generically (no typed schema); only the list merge keys that strategic merge patch and
server-side apply need, and the `kubectl get` columns, are declared here.
"""

from __future__ import annotations

from typing import Any

from kubesim.eventviews import CORE_EVENTS
from kubesim.resources import Column, ListMeta, PatchMeta, ResourceType, ScalePaths

AGE = Column("Age", "date", json_path=".metadata.creationTimestamp")

METADATA_META: PatchMeta = {
    "finalizers": ListMeta(strategy="merge"),
    "ownerReferences": ListMeta(merge_key="uid", strategy="merge"),
}

CONTAINER_META: PatchMeta = {
    "env": ListMeta(merge_key="name", strategy="merge"),
    "ports": ListMeta(merge_key="containerPort", strategy="merge"),
    "volumeMounts": ListMeta(merge_key="mountPath", strategy="merge"),
    "volumeDevices": ListMeta(merge_key="devicePath", strategy="merge"),
}

POD_SPEC_META: PatchMeta = {
    "containers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "initContainers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "ephemeralContainers": ListMeta(merge_key="name", strategy="merge", item=CONTAINER_META),
    "volumes": ListMeta(merge_key="name", strategy="merge"),
    "imagePullSecrets": ListMeta(merge_key="name", strategy="merge"),
    "hostAliases": ListMeta(merge_key="ip", strategy="merge"),
    "topologySpreadConstraints": ListMeta(merge_key="topologyKey", strategy="merge"),
}

TEMPLATE_META: PatchMeta = {"metadata": METADATA_META, "spec": POD_SPEC_META}


def _with_metadata(meta: PatchMeta) -> PatchMeta:
    return {"metadata": METADATA_META, **meta}


def _pod_ready(pod: dict[str, Any]) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for s in statuses if s.get('ready'))}/{total}"


def _pod_status(pod: dict[str, Any]) -> str:
    """The STATUS column as kubectl shows it: a container's waiting/terminated reason beats the phase."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        if (waiting := state.get("waiting")) and waiting.get("reason"):
            reason = waiting["reason"]
        elif (terminated := state.get("terminated")) and terminated.get("reason"):
            reason = terminated["reason"]
    return reason


def _pod_restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def _service_ports(service: dict[str, Any]) -> str:
    ports = (service.get("spec") or {}).get("ports") or []
    rendered = [f"{p.get('port')}/{p.get('protocol') or 'TCP'}" for p in ports]
    return ",".join(rendered) or "<none>"


def _job_status(job: dict[str, Any]) -> str:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in ("Complete", "Failed", "Suspended"):
            return str(condition["type"])
    return "Running"


def _reference(reference: dict[str, Any] | None) -> str:
    """An event's object as kubectl prints it: `pod/web-1`."""
    reference = reference or {}
    return f"{reference.get('kind', '').lower()}/{reference.get('name', '')}"


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


POD_COLUMNS = (
    Column("Name", json_path=".metadata.name", format="name"),
    Column("Ready", cell=_pod_ready),
    Column("Status", cell=_pod_status),
    Column("Restarts", "integer", cell=_pod_restarts),
    AGE,
    Column("IP", cell=lambda p: _status(p).get("podIP") or "<none>", priority=1),
    Column("Node", cell=lambda p: _spec(p).get("nodeName") or "<none>", priority=1),
)


def _columns(*columns: Column) -> dict[str, tuple[Column, ...]]:
    return {"*": (Column("Name", json_path=".metadata.name", format="name"), *columns)}


def builtin_types() -> list[ResourceType]:
    """A fresh list of the built-in resource types (fresh so each simulator owns its registry)."""
    pod_meta = _with_metadata({"spec": POD_SPEC_META})
    template_meta = _with_metadata({"spec": {"template": TEMPLATE_META}})
    return [
        ResourceType(
            "",
            ("v1",),
            "Namespace",
            "namespaces",
            "namespace",
            False,
            ("ns",),
            has_status=True,
            columns=_columns(Column("Status", cell=lambda n: _status(n).get("phase", "")), AGE),
            patch_meta=_with_metadata({}),
            return_deleted_object=True,
            extra_subresources=("finalize",),
        ),
        ResourceType(
            "",
            ("v1",),
            "Pod",
            "pods",
            "pod",
            True,
            ("po",),
            ("all",),
            has_status=True,
            columns={"*": POD_COLUMNS},
            patch_meta=pod_meta,
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            ("v1",),
            "Service",
            "services",
            "service",
            True,
            ("svc",),
            ("all",),
            has_status=True,
            columns=_columns(
                Column("Type", cell=lambda s: _spec(s).get("type", "ClusterIP")),
                Column("Cluster-IP", cell=lambda s: _spec(s).get("clusterIP", "")),
                Column("External-IP", cell=lambda s: ",".join(_spec(s).get("externalIPs") or []) or "<none>"),
                Column("Port(s)", cell=_service_ports),
                AGE,
            ),
            patch_meta=_with_metadata({"spec": {"ports": ListMeta(merge_key="port", strategy="merge")}}),
            return_deleted_object=True,
        ),
        ResourceType(
            "",
            ("v1",),
            "ConfigMap",
            "configmaps",
            "configmap",
            True,
            ("cm",),
            columns=_columns(
                Column(
                    "Data",
                    "integer",
                    cell=lambda c: len(c.get("data") or {}) + len(c.get("binaryData") or {}),
                ),
                AGE,
            ),
            patch_meta=_with_metadata({}),
        ),
        ResourceType(
            "",
            ("v1",),
            "Secret",
            "secrets",
            "secret",
            True,
            columns=_columns(
                Column("Type", cell=lambda s: s.get("type", "Opaque")),
                Column(
                    "Data",
                    "integer",
                    cell=lambda s: len(s.get("data") or {}) + len(s.get("stringData") or {}),
                ),
                AGE,
            ),
            patch_meta=_with_metadata({}),
        ),
        ResourceType(
            "",
            ("v1",),
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            True,
            ("sa",),
            columns=_columns(AGE),
            patch_meta=_with_metadata({"secrets": ListMeta(merge_key="name", strategy="merge")}),
            extra_subresources=("token",),
        ),
        ResourceType(
            "",
            ("v1",),
            "Event",
            "events",
            "event",
            True,
            ("ev",),
            columns=_columns(
                Column("Type", cell=lambda e: e.get("type", "")),
                Column("Reason", cell=lambda e: e.get("reason", "")),
                Column(
                    "Object",
                    cell=lambda e: _reference(e.get("involvedObject")),
                ),
                Column("Message", cell=lambda e: e.get("message", "")),
            ),
            patch_meta=_with_metadata({}),
            view=CORE_EVENTS,  # the events.k8s.io Events, as a real API server serves them
        ),
        ResourceType(
            "",
            ("v1",),
            "Node",
            "nodes",
            "node",
            False,
            ("no",),
            has_status=True,
            columns=_columns(Column("Status", cell=_node_ready), AGE),
            patch_meta=_with_metadata({}),
        ),
        ResourceType(
            "events.k8s.io",
            ("v1",),
            "Event",
            "events",
            "event",
            True,
            ("ev",),
            columns=_columns(
                Column("Type", cell=lambda e: e.get("type", "")),
                Column("Reason", cell=lambda e: e.get("reason", "")),
                Column(
                    "Object",
                    cell=lambda e: _reference(e.get("regarding")),
                ),
                Column("Note", cell=lambda e: e.get("note", "")),
            ),
            patch_meta=_with_metadata({}),
        ),
        ResourceType(
            "apps",
            ("v1",),
            "Deployment",
            "deployments",
            "deployment",
            True,
            ("deploy",),
            ("all",),
            has_status=True,
            columns=_columns(
                Column(
                    "Ready",
                    cell=lambda d: f"{_status(d).get('readyReplicas', 0)}/{_spec(d).get('replicas', 1)}",
                ),
                Column("Up-to-date", "integer", cell=lambda d: _status(d).get("updatedReplicas", 0)),
                Column("Available", "integer", cell=lambda d: _status(d).get("availableReplicas", 0)),
                AGE,
            ),
            patch_meta=template_meta,
            scale=ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector"),
        ),
        ResourceType(
            "batch",
            ("v1",),
            "Job",
            "jobs",
            "job",
            True,
            (),
            ("all",),
            has_status=True,
            columns=_columns(
                Column("Status", cell=_job_status),
                Column(
                    "Completions",
                    cell=lambda j: f"{_status(j).get('succeeded', 0)}/{_spec(j).get('completions', 1)}",
                ),
                AGE,
            ),
            patch_meta=template_meta,
        ),
        ResourceType(
            "coordination.k8s.io",
            ("v1",),
            "Lease",
            "leases",
            "lease",
            True,
            columns=_columns(
                Column("Holder", cell=lambda lease: _spec(lease).get("holderIdentity", "")), AGE
            ),
            patch_meta=_with_metadata({}),
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            ("v1",),
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            False,
            columns=_columns(Column("Webhooks", "integer", cell=lambda w: len(w.get("webhooks") or [])), AGE),
            patch_meta=_with_metadata({"webhooks": ListMeta(merge_key="name", strategy="merge")}),
        ),
        ResourceType(
            "admissionregistration.k8s.io",
            ("v1",),
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            False,
            columns=_columns(Column("Webhooks", "integer", cell=lambda w: len(w.get("webhooks") or [])), AGE),
            patch_meta=_with_metadata({"webhooks": ListMeta(merge_key="name", strategy="merge")}),
        ),
        ResourceType(
            "apiextensions.k8s.io",
            ("v1",),
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            False,
            ("crd", "crds"),
            has_status=True,
            columns=_columns(
                Column("Created At", cell=lambda c: (c.get("metadata") or {}).get("creationTimestamp", ""))
            ),
            patch_meta=_with_metadata({}),
        ),
        *_rbac_types(),
        *_review_types(),
    ]


def _rbac_types() -> list[ResourceType]:
    """rbac.authorization.k8s.io/v1: stored, and read by the RBAC authorizer (kubesim.auth)."""
    group, meta = (
        "rbac.authorization.k8s.io",
        _with_metadata({"subjects": ListMeta(strategy="replace"), "rules": ListMeta(strategy="replace")}),
    )
    return [
        ResourceType(group, ("v1",), "Role", "roles", "role", True, columns=_columns(AGE), patch_meta=meta),
        ResourceType(
            group,
            ("v1",),
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            False,
            columns=_columns(AGE),
            patch_meta=meta,
        ),
        ResourceType(
            group,
            ("v1",),
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            True,
            columns=_columns(Column("Role", cell=_role_ref), AGE),
            patch_meta=meta,
        ),
        ResourceType(
            group,
            ("v1",),
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            False,
            columns=_columns(Column("Role", cell=_role_ref), AGE),
            patch_meta=meta,
        ),
    ]


def _review_types() -> list[ResourceType]:
    """The create-only review kinds of authentication.k8s.io and authorization.k8s.io (never stored)."""
    reviews = [
        ("authentication.k8s.io", "TokenReview", False),
        ("authentication.k8s.io", "SelfSubjectReview", False),
        ("authorization.k8s.io", "SubjectAccessReview", False),
        ("authorization.k8s.io", "SelfSubjectAccessReview", False),
        ("authorization.k8s.io", "SelfSubjectRulesReview", False),
        ("authorization.k8s.io", "LocalSubjectAccessReview", True),
    ]
    return [
        ResourceType(
            group,
            ("v1",),
            kind,
            kind.lower() + "s",
            kind.lower(),
            namespaced,
            patch_meta=_with_metadata({}),
            verbs=("create",),
        )
        for group, kind, namespaced in reviews
    ]


def _role_ref(binding: dict[str, Any]) -> str:
    reference = binding.get("roleRef") or {}
    return f"{reference.get('kind', '')}/{reference.get('name', '')}"


def _node_ready(node: dict[str, Any]) -> str:
    for condition in _status(node).get("conditions") or []:
        if condition.get("type") == "Ready":
            return "Ready" if condition.get("status") == "True" else "NotReady"
    return "Unknown"
