"""The built-in kinds a chart or a CI script applies, served as the API server serves them: discovery
(scope, short names, the `all` category), create/get/list with the real kubectl, and `kubectl get` tables.

Written against the `cluster` fixture so they could run against a real cluster too
(KUBESIM_CONTRACT_KUBECONFIG).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import requests
import yaml

#: (group/version, kind, plural, namespaced, shortNames, categories) as `kubectl api-resources` lists them
UPSTREAM = [
    ("apps/v1", "StatefulSet", "statefulsets", True, ["sts"], ["all"]),
    ("apps/v1", "ReplicaSet", "replicasets", True, ["rs"], ["all"]),
    ("apps/v1", "DaemonSet", "daemonsets", True, ["ds"], ["all"]),
    ("batch/v1", "CronJob", "cronjobs", True, ["cj"], ["all"]),
    ("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", True, ["netpol"], []),
    ("networking.k8s.io/v1", "Ingress", "ingresses", True, ["ing"], []),
    ("networking.k8s.io/v1", "IngressClass", "ingressclasses", False, [], []),
    ("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"], []),
    ("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"], []),
    ("v1", "PersistentVolume", "persistentvolumes", False, ["pv"], []),
    ("v1", "Endpoints", "endpoints", True, ["ep"], []),
    ("v1", "ResourceQuota", "resourcequotas", True, ["quota"], []),
    ("v1", "LimitRange", "limitranges", True, ["limits"], []),
    ("v1", "ReplicationController", "replicationcontrollers", True, ["rc"], ["all"]),
    ("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True, [], []),
    ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, ["hpa"], ["all"]),
    ("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", False, ["pc"], []),
    ("storage.k8s.io/v1", "StorageClass", "storageclasses", False, ["sc"], []),
]

POD_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}

#: one minimal valid object of each kind (name `sample`), as `kubectl apply -f` would send it
SAMPLES: dict[str, dict[str, Any]] = {
    "StatefulSet": {
        "spec": {"serviceName": "web", "selector": {"matchLabels": {"app": "web"}}, "template": POD_TEMPLATE}
    },
    "ReplicaSet": {
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": POD_TEMPLATE}
    },
    "DaemonSet": {"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": POD_TEMPLATE}},
    "CronJob": {
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {**POD_TEMPLATE, "spec": {**POD_TEMPLATE["spec"], "restartPolicy": "Never"}}
                }
            },
        }
    },
    "NetworkPolicy": {"spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]}},
    "Ingress": {
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {
                    "host": "ml.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ],
        }
    },
    "IngressClass": {"spec": {"controller": "k8s.io/ingress-nginx"}},
    "PodDisruptionBudget": {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}},
    "PersistentVolumeClaim": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "PersistentVolume": {
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"},
        }
    },
    "Endpoints": {"subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80}]}]},
    "ResourceQuota": {"spec": {"hard": {"pods": "10"}}},
    "LimitRange": {"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}},
    "ReplicationController": {"spec": {"replicas": 1, "selector": {"app": "web"}, "template": POD_TEMPLATE}},
    "EndpointSlice": {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.244.0.5"]}],
        "ports": [{"port": 80}],
    },
    "HorizontalPodAutoscaler": {
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
        }
    },
    "PriorityClass": {"value": 1000, "description": "training jobs"},
    "StorageClass": {
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    },
}


def _contains(stored: Any, sent: Any) -> bool:
    """Every field sent is stored unchanged (the server may add defaults and status beside them)."""
    if isinstance(sent, dict):
        return isinstance(stored, dict) and all(
            k in stored and _contains(stored[k], v) for k, v in sent.items()
        )
    if isinstance(sent, list):  # list items get their defaults too (a container's imagePullPolicy…)
        return isinstance(stored, list) and len(stored) == len(sent) and all(map(_contains, stored, sent))
    return bool(stored == sent)


def _discovery_path(group_version: str) -> str:
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


@pytest.mark.parametrize(("group_version", "kind", "plural", "namespaced", "short", "categories"), UPSTREAM)
def test_discovery_lists_each_kind_as_the_api_server_does(
    http: Callable[..., requests.Response],
    group_version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    short: list[str],
    categories: list[str],
) -> None:
    """`kubectl api-resources`: "Print the supported API resources on the server" (kubectl reference), read
    from each group version's resource list: scope, short names and categories as a real 1.3x API server
    lists them; `all` is the category `kubectl get all` expands to the workload kinds."""
    resources = http("GET", _discovery_path(group_version)).json()["resources"]
    entry = next(r for r in resources if r["name"] == plural)
    assert entry["kind"] == kind
    assert entry["namespaced"] is namespaced
    assert entry.get("shortNames", []) == short
    assert entry.get("categories", []) == categories
    assert set(entry["verbs"]) >= {"create", "delete", "get", "list", "patch", "update", "watch"}


@pytest.mark.parametrize(("group_version", "kind", "plural", "namespaced", "short", "categories"), UPSTREAM)
def test_kubectl_applies_gets_and_deletes_each_kind_by_short_name(
    kubectl,
    group_version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    short: list[str],
    categories: list[str],
) -> None:
    """Stored as written: what `kubectl apply` sends comes back from `kubectl get -o json`, found by its
    short name where it has one, in the namespace for namespaced kinds and cluster-wide for the others."""
    name = f"sample-{plural}" if not namespaced else "sample"
    manifest = {"apiVersion": group_version, "kind": kind, "metadata": {"name": name}, **SAMPLES[kind]}
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    try:
        stored = json.loads(kubectl("get", (short or [plural])[0], name, "-o", "json").stdout)
        assert stored["kind"] == kind
        assert ("namespace" in stored["metadata"]) is namespaced
        assert _contains(stored, SAMPLES[kind])
        assert name in kubectl("get", plural, name).stdout.splitlines()[1]
    finally:
        kubectl("delete", plural, name)


def test_kubectl_get_all_lists_the_workload_kinds_of_the_all_category(kubectl) -> None:
    """`kubectl get all` lists the resources in the category `all`: a StatefulSet and a CronJob show, a
    ConfigMap (not in the category) does not."""
    for kind, group_version in (("StatefulSet", "apps/v1"), ("CronJob", "batch/v1")):
        manifest = {
            "apiVersion": group_version,
            "kind": kind,
            "metadata": {"name": "listed"},
            **SAMPLES[kind],
        }
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    kubectl("create", "configmap", "unlisted")
    names = kubectl("get", "all", "-o", "name").stdout.split()
    assert "statefulset.apps/listed" in names
    assert "cronjob.batch/listed" in names
    assert not [n for n in names if n.startswith("configmap/")]


def test_table_columns_are_kubectls(kubectl) -> None:
    """`kubectl get` prints the columns the API server's table convertor declares for the kind, e.g.
    StatefulSet "NAME READY AGE", PodDisruptionBudget "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED
    DISRUPTIONS AGE"."""
    for kind, group_version in (("StatefulSet", "apps/v1"), ("PodDisruptionBudget", "policy/v1")):
        manifest = {"apiVersion": group_version, "kind": kind, "metadata": {"name": "cols"}, **SAMPLES[kind]}
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    statefulsets = kubectl("get", "sts").stdout.splitlines()
    assert statefulsets[0].split() == ["NAME", "READY", "AGE"]
    assert statefulsets[1].split()[:2] == ["cols", "0/1"]
    budgets = kubectl("get", "pdb").stdout.splitlines()
    assert budgets[0].split() == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    assert budgets[1].split()[:4] == ["cols", "1", "N/A", "0"]
