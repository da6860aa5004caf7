"""Applying our manifests to kubesim with the real kubectl (`apply --server-side`), as an operator would.

kubesim serves the core, apps, batch, coordination, admissionregistration and apiextensions kinds. The
other kinds our manifests use (RBAC, PodDisruptionBudget, NetworkPolicy, Ingress, HorizontalPodAutoscaler)
and those of cert-manager and the Prometheus Operator are added to its registry as schemaless kinds: for
them the apply checks the API plumbing (discovery, field managers, namespaces), while their fields are
checked by the offline schema validation.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from .manifests import KUBECTL

#: (group, version, kind, plural, namespaced) of the kinds kubesim does not serve by itself.
MISSING_KINDS = [
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    ("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True),
    ("networking.k8s.io", "v1", "Ingress", "ingresses", True),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True),
    ("cert-manager.io", "v1", "Issuer", "issuers", True),
    ("cert-manager.io", "v1", "Certificate", "certificates", True),
    ("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", True),
]


def serve_missing_kinds(simulator: Any) -> None:
    from kubesim.resources import ResourceType

    for group, version, kind, plural, namespaced in MISSING_KINDS:
        simulator.store.registry.add(
            ResourceType(group, (version,), kind, plural, kind.lower(), namespaced, has_status=True)
        )


def kubectl(simulator: Any, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(simulator.kubeconfig_path)}
    return subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env, check=False, timeout=120
    )


def apply_server_side(simulator: Any, manifests: Iterable[dict[str, Any]], namespace: str) -> str:
    """`kubectl apply --server-side` of the manifests into `namespace` (created first); returns kubectl's
    output, or raises with its error."""
    manifests = list(manifests)
    simulator.store.ensure_namespace(namespace)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "manifests.yaml"
        path.write_text(yaml.safe_dump_all(manifests, sort_keys=False))
        apply = ["apply", "--server-side", "--field-manager=argoml-install", "-n", namespace, "-f", str(path)]
        result = kubectl(simulator, *apply)
    if result.returncode != 0:
        raise AssertionError(f"kubectl apply --server-side failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout
