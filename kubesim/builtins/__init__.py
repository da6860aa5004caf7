"""The built-in kinds the simulator serves, with their printer columns, strategic-merge list keys and
field labels.

They are stored as dicts; their schemas come from kubesim.openapi, their defaults from `defaults`, the
rules of their updates from `updates`.
"""

from __future__ import annotations

from typing import Any

from kubesim.builtins import stored
from kubesim.builtins.common import (
    AGE,
    POD_SPEC_META,
    TEMPLATE_META,
    builtin_kind,
    spec_of,
    status_of,
    with_metadata,
)
from kubesim.eventviews import CORE_EVENTS
from kubesim.resources import Column, ListMeta, ResourceType, ScalePaths


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


def _event_columns(regarding: str, text: str) -> tuple[Column, ...]:
    """`kubectl get events` of either Event kind, which name the object and the text differently (core/v1
    `involvedObject` and `message`, events.k8s.io `regarding` and `note`); the last column is named after
    the text's field."""
    return (
        Column("Type", cell=lambda e: e.get("type", "")),
        Column("Reason", cell=lambda e: e.get("reason", "")),
        Column("Object", cell=lambda e: _reference(e.get(regarding))),
        Column(text.capitalize(), cell=lambda e: e.get(text, "")),
    )


POD_COLUMNS = (
    Column("Ready", cell=_pod_ready),
    Column("Status", cell=_pod_status),
    Column("Restarts", "integer", cell=_pod_restarts),
    AGE,
    Column("IP", cell=lambda p: status_of(p).get("podIP") or "<none>", priority=1),
    Column("Node", cell=lambda p: spec_of(p).get("nodeName") or "<none>", priority=1),
)


#: the field selectors the API server supports beyond metadata.name and metadata.namespace (each kind's
#: field label conversion function upstream: pkg/apis/core/v1/conversion.go, batch, apps, events)
POD_FIELD_LABELS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
)
_OBJECT_REFERENCE = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
CORE_EVENT_FIELD_LABELS = (
    *(f"involvedObject.{field}" for field in _OBJECT_REFERENCE),
    "reason",
    "reportingComponent",
    "source",
    "type",
)
EVENT_FIELD_LABELS = (
    *(f"regarding.{field}" for field in _OBJECT_REFERENCE),
    "reason",
    "reportingController",
    "deprecatedSource",
    "type",
)


def builtin_types() -> list[ResourceType]:
    """A fresh list of the built-in resource types (fresh so each simulator owns its registry)."""
    pod_meta = with_metadata({"spec": POD_SPEC_META})
    template_meta = with_metadata({"spec": {"template": TEMPLATE_META}})
    return [
        builtin_kind(
            "",
            "Namespace",
            False,
            ("ns",),
            has_status=True,
            columns=(Column("Status", cell=lambda n: status_of(n).get("phase", "")), AGE),
            return_deleted_object=True,
            extra_subresources=("finalize",),
            field_labels=("status.phase",),
        ),
        builtin_kind(
            "",
            "Pod",
            True,
            ("po",),
            ("all",),
            has_status=True,
            columns=POD_COLUMNS,
            patch_meta=pod_meta,
            return_deleted_object=True,
            # The streaming ones and proxy are served by kubesim.server.streams (400, or 503 for proxy,
            # without a stream backend); eviction and ephemeralcontainers by kubesim.kubelet.eviction and
            # .ephemeral.
            extra_subresources=(
                "log",
                "exec",
                "attach",
                "portforward",
                "proxy",
                "eviction",
                "ephemeralcontainers",
            ),
            field_labels=POD_FIELD_LABELS,
        ),
        builtin_kind(
            "",
            "Service",
            True,
            ("svc",),
            ("all",),
            has_status=True,
            columns=(
                Column("Type", cell=lambda s: spec_of(s).get("type", "ClusterIP")),
                Column("Cluster-IP", cell=lambda s: spec_of(s).get("clusterIP", "")),
                Column(
                    "External-IP", cell=lambda s: ",".join(spec_of(s).get("externalIPs") or []) or "<none>"
                ),
                Column("Port(s)", cell=_service_ports),
                AGE,
            ),
            patch_meta=with_metadata({"spec": {"ports": ListMeta(merge_key="port", strategy="merge")}}),
            return_deleted_object=True,
            extra_subresources=("proxy",),  # kubesim.server.streams.proxy
        ),
        builtin_kind(
            "",
            "ConfigMap",
            True,
            ("cm",),
            columns=(
                Column(
                    "Data",
                    "integer",
                    cell=lambda c: len(c.get("data") or {}) + len(c.get("binaryData") or {}),
                ),
                AGE,
            ),
        ),
        builtin_kind(
            "",
            "Secret",
            True,
            columns=(
                Column("Type", cell=lambda s: s.get("type", "Opaque")),
                Column(
                    "Data",
                    "integer",
                    cell=lambda s: len(s.get("data") or {}) + len(s.get("stringData") or {}),
                ),
                AGE,
            ),
            field_labels=("type",),
        ),
        builtin_kind(
            "",
            "ServiceAccount",
            True,
            ("sa",),
            columns=(AGE,),
            patch_meta=with_metadata({"secrets": ListMeta(merge_key="name", strategy="merge")}),
            extra_subresources=("token",),
        ),
        builtin_kind(
            "",
            "Event",
            True,
            ("ev",),
            columns=_event_columns("involvedObject", "message"),
            view=CORE_EVENTS,  # the events.k8s.io Events, as a real API server serves them
            field_labels=CORE_EVENT_FIELD_LABELS,
        ),
        builtin_kind(
            "",
            "Node",
            False,
            ("no",),
            has_status=True,
            columns=(
                Column("Status", cell=_node_status),
                Column("Roles", cell=_node_roles),
                AGE,
                Column(
                    "Version", cell=lambda n: (status_of(n).get("nodeInfo") or {}).get("kubeletVersion", "")
                ),
            ),
            field_labels=("spec.unschedulable",),
        ),
        builtin_kind(
            "events.k8s.io",
            "Event",
            True,
            ("ev",),
            columns=_event_columns("regarding", "note"),
            field_labels=EVENT_FIELD_LABELS,
        ),
        builtin_kind(
            "apps",
            "Deployment",
            True,
            ("deploy",),
            ("all",),
            has_status=True,
            columns=(
                Column(
                    "Ready",
                    cell=lambda d: f"{status_of(d).get('readyReplicas', 0)}/{spec_of(d).get('replicas', 1)}",
                ),
                Column("Up-to-date", "integer", cell=lambda d: status_of(d).get("updatedReplicas", 0)),
                Column("Available", "integer", cell=lambda d: status_of(d).get("availableReplicas", 0)),
                AGE,
            ),
            patch_meta=template_meta,
            scale=ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector"),
        ),
        builtin_kind(
            "batch",
            "Job",
            True,
            (),
            ("all",),
            has_status=True,
            columns=(
                Column("Status", cell=_job_status),
                Column(
                    "Completions",
                    cell=lambda j: f"{status_of(j).get('succeeded', 0)}/{spec_of(j).get('completions', 1)}",
                ),
                AGE,
            ),
            patch_meta=template_meta,
            field_labels=("status.successful",),
        ),
        builtin_kind(
            "coordination.k8s.io",
            "Lease",
            True,
            columns=(Column("Holder", cell=lambda lease: spec_of(lease).get("holderIdentity", "")), AGE),
        ),
        *(
            builtin_kind(
                "admissionregistration.k8s.io",
                kind,
                False,
                columns=(Column("Webhooks", "integer", cell=lambda w: len(w.get("webhooks") or [])), AGE),
                patch_meta=with_metadata({"webhooks": ListMeta(merge_key="name", strategy="merge")}),
            )
            for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        ),
        builtin_kind(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            False,
            ("crd", "crds"),
            has_status=True,
            columns=(
                Column("Created At", cell=lambda c: (c.get("metadata") or {}).get("creationTimestamp", "")),
            ),
        ),
        *_rbac_types(),
        *_review_types(),
        *stored.stored_kinds(),
    ]


def _rbac_types() -> list[ResourceType]:
    """rbac.authorization.k8s.io/v1: stored, and read by the RBAC authorizer (kubesim.auth)."""
    group, meta = (
        "rbac.authorization.k8s.io",
        with_metadata({"subjects": ListMeta(strategy="replace"), "rules": ListMeta(strategy="replace")}),
    )
    return [
        builtin_kind(group, "Role", True, columns=(AGE,), patch_meta=meta),
        builtin_kind(group, "ClusterRole", False, columns=(AGE,), patch_meta=meta),
        builtin_kind(
            group,
            "RoleBinding",
            True,
            columns=(Column("Role", cell=_role_ref), AGE),
            patch_meta=meta,
        ),
        builtin_kind(
            group,
            "ClusterRoleBinding",
            False,
            columns=(Column("Role", cell=_role_ref), AGE),
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
    return [builtin_kind(group, kind, namespaced, verbs=("create",)) for group, kind, namespaced in reviews]


def _role_ref(binding: dict[str, Any]) -> str:
    reference = binding.get("roleRef") or {}
    return f"{reference.get('kind', '')}/{reference.get('name', '')}"


def _node_status(node: dict[str, Any]) -> str:
    """STATUS as the API server prints it: Ready/NotReady/Unknown, `,SchedulingDisabled` once cordoned."""
    ready = "Unknown"
    for condition in status_of(node).get("conditions") or []:
        if condition.get("type") == "Ready":
            ready = "Ready" if condition.get("status") == "True" else "NotReady"
    return f"{ready},SchedulingDisabled" if spec_of(node).get("unschedulable") else ready


def _node_roles(node: dict[str, Any]) -> str:
    """ROLES: the `node-role.kubernetes.io/<role>` labels, `<none>` without any."""
    prefix = "node-role.kubernetes.io/"
    labels = (node.get("metadata") or {}).get("labels") or {}
    return ",".join(sorted(k[len(prefix) :] for k in labels if k.startswith(prefix))) or "<none>"
