"""The default ClusterRoles and ClusterRoleBindings a real cluster starts with, that tests rely on.

Abridged from the apiserver's bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go):
cluster-admin for system:masters; system:discovery, system:basic-user and system:public-info-viewer for
every authenticated user; the user-facing admin/edit/view roles, filled by aggregation from the
system:aggregate-to-* roles (and from any ClusterRole a chart labels `aggregate-to-<role>: "true"`).
"""

from __future__ import annotations

from typing import Any

from kubesim.identity import AUTHENTICATED, MASTERS, UNAUTHENTICATED

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, Any]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


def _cluster_role(
    name: str,
    rules: list[dict[str, Any]],
    labels: dict[str, str] | None = None,
    aggregate_from: str | None = None,
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {**_BOOTSTRAP_LABELS, **(labels or {})},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }
    if aggregate_from:
        selector = {"matchLabels": {f"{_AGGREGATE}{aggregate_from}": "true"}}
        role["aggregationRule"] = {"clusterRoleSelectors": [selector]}
    return role


def _binding(name: str, role: str, groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": dict(_BOOTSTRAP_LABELS),
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups],
    }


_VIEW = [
    _rule(
        _READ,
        [""],
        [
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
            "namespaces",
            "podtemplates",
        ],
    ),
    _rule(_READ, ["discovery.k8s.io"], ["endpointslices"]),
    _rule(
        _READ,
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
    ),
    _rule(_READ, ["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
    _rule(_READ, ["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    _rule(_READ, ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
    _rule(_READ, ["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"]),
]

_EDIT = [
    _rule(
        _READ,
        [""],
        ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
    ),
    _rule(["impersonate"], [""], ["serviceaccounts"]),
    _rule(_WRITE, [""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"]),
    _rule(["create"], [""], ["pods/eviction", "serviceaccounts/token"]),
    _rule(
        _WRITE,
        [""],
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
    ),
    _rule(
        _WRITE,
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
    ),
    _rule(_WRITE, ["autoscaling"], ["horizontalpodautoscalers"]),
    _rule(_WRITE, ["batch"], ["cronjobs", "jobs"]),
    _rule(_WRITE, ["policy"], ["poddisruptionbudgets"]),
    _rule(_WRITE, ["networking.k8s.io"], ["ingresses", "networkpolicies"]),
    _rule([*_READ, *_WRITE], ["coordination.k8s.io"], ["leases"]),
]

_ADMIN = [
    _rule(["create"], ["authorization.k8s.io"], ["localsubjectaccessreviews"]),
    _rule([*_READ, *_WRITE], ["rbac.authorization.k8s.io"], ["rolebindings", "roles"]),
]

_DISCOVERY_URLS = [
    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
    "/version", "/version/",
]  # fmt: skip
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


def default_objects() -> list[dict[str, Any]]:
    """Fresh copies of the bootstrap ClusterRoles (aggregating ones first empty) and their bindings."""
    everything = [_rule(["*"], ["*"], ["*"]), {"verbs": ["*"], "nonResourceURLs": ["*"]}]
    return [
        _cluster_role("cluster-admin", everything),
        _cluster_role("system:discovery", [{"verbs": ["get"], "nonResourceURLs": _DISCOVERY_URLS}]),
        _cluster_role("system:public-info-viewer", [{"verbs": ["get"], "nonResourceURLs": _PUBLIC_URLS}]),
        _cluster_role(
            "system:basic-user",
            [
                _rule(
                    ["create"],
                    ["authorization.k8s.io"],
                    ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]),
            ],
        ),
        _cluster_role("admin", [], aggregate_from="admin"),
        _cluster_role("edit", [], {f"{_AGGREGATE}admin": "true"}, aggregate_from="edit"),
        _cluster_role("view", [], {f"{_AGGREGATE}edit": "true"}, aggregate_from="view"),
        _cluster_role("system:aggregate-to-admin", _ADMIN, {f"{_AGGREGATE}admin": "true"}),
        _cluster_role("system:aggregate-to-edit", _EDIT, {f"{_AGGREGATE}edit": "true"}),
        _cluster_role("system:aggregate-to-view", _VIEW, {f"{_AGGREGATE}view": "true"}),
        _binding("cluster-admin", "cluster-admin", [MASTERS]),
        _binding("system:discovery", "system:discovery", [AUTHENTICATED]),
        _binding("system:basic-user", "system:basic-user", [AUTHENTICATED]),
        _binding("system:public-info-viewer", "system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
    ]
