"""The kinds a chart or a CI script applies that no simulated controller acts on: stored as written.

Scope, short names and categories are those of the API server's discovery (`kubectl api-resources`);
the columns are `kubectl get`'s for each kind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.builtins.common import (
    AGE,
    TEMPLATE_META,
    builtin_kind,
    spec_of,
    status_of,
    with_metadata,
)
from kubesim.hpaviews import HPA_V1
from kubesim.resources import Column, ListMeta, ResourceType, ScalePaths

# `kubectl scale` on the replica-keeping kinds, as on Deployments (autoscaling/v1 Scale).
REPLICAS_SCALE = ScalePaths(".spec.replicas", ".status.replicas", ".spec.selector")


def _ratio(ready: str, wanted: str) -> Callable[[dict[str, Any]], str]:
    """A READY column such as `2/3`: status.<ready> of spec.<wanted>."""
    return lambda o: f"{status_of(o).get(ready, 0)}/{spec_of(o).get(wanted, 1)}"


def _count(path: str) -> Callable[[dict[str, Any]], int]:
    """An integer column read from `status.<path>` (0 while the field is unset)."""
    return lambda o: int(status_of(o).get(path) or 0)


# `kubectl get` of a ReplicaSet or a ReplicationController: desired, current and ready replicas.
REPLICA_COLUMNS = (
    Column("Desired", "integer", cell=lambda r: int(spec_of(r).get("replicas", 1))),
    Column("Current", "integer", cell=_count("replicas")),
    Column("Ready", "integer", cell=_count("readyReplicas")),
    AGE,
)


def _replica_keeper(group: str, kind: str, short_name: str, **details: Any) -> ResourceType:
    """A ReplicaSet or its predecessor, the ReplicationController: the same columns, pod template and field
    label."""
    return builtin_kind(
        group,
        kind,
        True,
        (short_name,),
        ("all",),
        has_status=True,
        columns=REPLICA_COLUMNS,
        patch_meta=with_metadata({"spec": {"template": TEMPLATE_META}}),
        field_labels=("status.replicas",),
        **details,
    )


def _joined(values: list[Any] | None) -> str:
    return ",".join(str(v) for v in values or []) or "<none>"


def stored_kinds() -> list[ResourceType]:
    """The other kinds a chart or a CI script applies, stored as written (no controller acts on them).

    Scope, short names and categories are those of the API server's discovery (`kubectl api-resources`
    on Kubernetes 1.3x); the columns are `kubectl get`'s for each kind.
    """
    template_meta = with_metadata({"spec": {"template": TEMPLATE_META}})
    cronjob_meta = with_metadata({"spec": {"jobTemplate": {"spec": {"template": TEMPLATE_META}}}})
    return [
        builtin_kind(
            "apps",
            "StatefulSet",
            True,
            ("sts",),
            ("all",),
            has_status=True,
            columns=(Column("Ready", cell=_ratio("readyReplicas", "replicas")), AGE),
            patch_meta=template_meta,
            scale=REPLICAS_SCALE,
        ),
        _replica_keeper("apps", "ReplicaSet", "rs", scale=REPLICAS_SCALE),
        builtin_kind(
            "apps",
            "DaemonSet",
            True,
            ("ds",),
            ("all",),
            has_status=True,
            columns=(
                Column("Desired", "integer", cell=_count("desiredNumberScheduled")),
                Column("Current", "integer", cell=_count("currentNumberScheduled")),
                Column("Ready", "integer", cell=_count("numberReady")),
                Column("Up-to-date", "integer", cell=_count("updatedNumberScheduled")),
                Column("Available", "integer", cell=_count("numberAvailable")),
                AGE,
            ),
            patch_meta=template_meta,
        ),
        # in kubectl apply --prune's default allow-list, so it must be served
        _replica_keeper("", "ReplicationController", "rc"),
        builtin_kind(
            "batch",
            "CronJob",
            True,
            ("cj",),
            ("all",),
            has_status=True,
            columns=(
                Column("Schedule", cell=lambda c: spec_of(c).get("schedule", "")),
                Column("Suspend", cell=lambda c: str(bool(spec_of(c).get("suspend")))),
                Column("Active", "integer", cell=lambda c: len(status_of(c).get("active") or [])),
                Column("Last Schedule", cell=lambda c: status_of(c).get("lastScheduleTime") or "<none>"),
                AGE,
            ),
            patch_meta=cronjob_meta,
        ),
        builtin_kind(
            "networking.k8s.io",
            "NetworkPolicy",
            True,
            ("netpol",),
            plural="networkpolicies",
            columns=(Column("Pod-Selector", cell=lambda n: _selector(spec_of(n).get("podSelector"))), AGE),
        ),
        builtin_kind(
            "networking.k8s.io",
            "Ingress",
            True,
            ("ing",),
            plural="ingresses",
            has_status=True,
            columns=(
                Column("Class", cell=lambda i: spec_of(i).get("ingressClassName") or "<none>"),
                Column(
                    "Hosts",
                    cell=lambda i: _joined([r.get("host", "*") for r in spec_of(i).get("rules") or []]),
                ),
                AGE,
            ),
        ),
        builtin_kind(
            "networking.k8s.io",
            "IngressClass",
            False,
            plural="ingressclasses",
            columns=(Column("Controller", cell=lambda c: spec_of(c).get("controller", "")), AGE),
        ),
        builtin_kind(
            "policy",
            "PodDisruptionBudget",
            True,
            ("pdb",),
            has_status=True,
            columns=(
                Column("Min Available", cell=lambda p: str(spec_of(p).get("minAvailable", "N/A"))),
                Column("Max Unavailable", cell=lambda p: str(spec_of(p).get("maxUnavailable", "N/A"))),
                Column("Allowed Disruptions", "integer", cell=_count("disruptionsAllowed")),
                AGE,
            ),
        ),
        builtin_kind(
            "",
            "PersistentVolumeClaim",
            True,
            ("pvc",),
            has_status=True,
            columns=(
                Column("Status", cell=lambda c: status_of(c).get("phase", "Pending")),
                Column("Volume", cell=lambda c: spec_of(c).get("volumeName", "")),
                Column("Storage Class", cell=lambda c: spec_of(c).get("storageClassName") or "<unset>"),
                AGE,
            ),
        ),
        builtin_kind(
            "",
            "PersistentVolume",
            False,
            ("pv",),
            has_status=True,
            columns=(
                Column("Capacity", cell=lambda v: str((spec_of(v).get("capacity") or {}).get("storage", ""))),
                Column(
                    "Reclaim Policy", cell=lambda v: spec_of(v).get("persistentVolumeReclaimPolicy", "Retain")
                ),
                Column("Status", cell=lambda v: status_of(v).get("phase", "Pending")),
                AGE,
            ),
        ),
        builtin_kind(
            "",
            "Endpoints",
            True,
            ("ep",),
            plural="endpoints",
            columns=(Column("Endpoints", cell=_endpoints), AGE),
            patch_meta=with_metadata({"subsets": ListMeta(strategy="replace")}),
        ),
        builtin_kind(
            "",
            "ResourceQuota",
            True,
            ("quota",),
            has_status=True,
            columns=(AGE,),
        ),
        builtin_kind(
            "",
            "LimitRange",
            True,
            ("limits",),
            columns=(
                Column("Created At", cell=lambda r: (r.get("metadata") or {}).get("creationTimestamp", "")),
            ),
        ),
        builtin_kind(
            "discovery.k8s.io",
            "EndpointSlice",
            True,
            columns=(
                Column("Address Type", cell=lambda e: e.get("addressType", "")),
                Column("Ports", cell=lambda e: _joined([p.get("port") for p in e.get("ports") or []])),
                AGE,
            ),
        ),
        builtin_kind(  # stored as autoscaling/v2; v1 is converted both ways (kubesim.hpaviews)
            "autoscaling",
            "HorizontalPodAutoscaler",
            True,
            ("hpa",),
            ("all",),
            versions=("v2", "v1"),
            has_status=True,
            columns=(
                Column("Reference", cell=_scale_target),
                Column("Targets", cell=hpa_targets),
                Column("MinPods", cell=lambda h: str(spec_of(h).get("minReplicas", "<unset>"))),
                Column("MaxPods", "integer", cell=lambda h: int(spec_of(h).get("maxReplicas", 0))),
                Column("Replicas", "integer", cell=_count("currentReplicas")),
                AGE,
            ),
            patch_meta=with_metadata({"spec": {"metrics": ListMeta(strategy="replace")}}),
            conversions={"v1": HPA_V1},
        ),
        builtin_kind(
            "scheduling.k8s.io",
            "PriorityClass",
            False,
            ("pc",),
            plural="priorityclasses",
            columns=(
                Column("Value", "integer", cell=lambda p: int(p.get("value", 0))),
                Column("Global-Default", cell=lambda p: str(bool(p.get("globalDefault")))),
                AGE,
            ),
        ),
        builtin_kind(
            "storage.k8s.io",
            "StorageClass",
            False,
            ("sc",),
            plural="storageclasses",
            columns=(
                Column("Provisioner", cell=lambda s: s.get("provisioner", "")),
                Column("ReclaimPolicy", cell=lambda s: s.get("reclaimPolicy", "Delete")),
                Column("VolumeBindingMode", cell=lambda s: s.get("volumeBindingMode", "Immediate")),
                AGE,
            ),
        ),
    ]


def _selector(selector: dict[str, Any] | None) -> str:
    """A label selector as kubectl prints it: `app=web,tier=db`, `<none>` when it selects every pod."""
    labels = (selector or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _endpoints(endpoints: dict[str, Any]) -> str:
    addresses = [
        f"{address.get('ip')}:{port.get('port')}"
        for subset in endpoints.get("subsets") or []
        for address in subset.get("addresses") or []
        for port in subset.get("ports") or [{}]
    ]
    return _joined(addresses)


def hpa_targets(hpa: dict[str, Any]) -> str:
    """TARGETS as the API server prints it (formatHPAMetrics): `cpu: <unknown>/80%` per metric, the
    current value from the status at the same index, at most two then `+ N more...`."""
    specs = spec_of(hpa).get("metrics") or []
    if not specs:
        return "<none>"
    statuses = status_of(hpa).get("currentMetrics") or []
    shown = [_hpa_target(spec, statuses[i] if i < len(statuses) else {}) for i, spec in enumerate(specs)]
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _hpa_target(spec: dict[str, Any], status: dict[str, Any]) -> str:
    kind = spec.get("type", "")
    field = {
        "External": "external",
        "Pods": "pods",
        "Object": "object",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(kind)
    if field is None:
        return "<unknown type>"
    target = (spec.get(field) or {}).get("target") or {}
    current = (status.get(field) or {}).get("current") if status.get(field) else None
    if kind in ("Resource", "ContainerResource"):
        name = (spec.get(field) or {}).get("name", "")
        if target.get("averageValue") is not None:
            value = (current or {}).get("averageValue", "<unknown>")
            return f"{name}: {value}/{target['averageValue']}"
        utilization = (current or {}).get("averageUtilization")
        shown = "<unknown>" if utilization is None else f"{utilization}%"
        goal = "<auto>" if target.get("averageUtilization") is None else f"{target['averageUtilization']}%"
        return f"{name}: {shown}/{goal}"
    if kind == "Pods":
        return f"{(current or {}).get('averageValue', '<unknown>')}/{target.get('averageValue', '')}"
    if target.get("averageValue") is not None:
        return f"{(current or {}).get('averageValue', '<unknown>')}/{target['averageValue']} (avg)"
    return f"{(current or {}).get('value', '<unknown>')}/{target.get('value', '')}"


def _scale_target(hpa: dict[str, Any]) -> str:
    target = spec_of(hpa).get("scaleTargetRef") or {}
    return f"{target.get('kind', '')}/{target.get('name', '')}"
