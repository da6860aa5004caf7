"""Applying our manifests to kubesim with the real kubectl (`apply --server-side`), as an operator would.

kubesim serves every built-in kind our manifests use. cert-manager's and the Prometheus Operator's kinds
are CRDs on a real cluster too, installed before our chart: `install_third_party_crds` applies schemaless
stand-ins for them (their fields are checked by the offline schema validation).
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

#: (group, kind, plural) of the third-party kinds the chart may create, all namespaced
THIRD_PARTY_KINDS = [
    ("cert-manager.io", "Issuer", "issuers"),
    ("cert-manager.io", "Certificate", "certificates"),
    ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
]


def third_party_crds() -> list[dict[str, Any]]:
    """Schemaless CRDs standing in for cert-manager's and the Prometheus Operator's."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {
                    "kind": kind,
                    "plural": plural,
                    "singular": kind.lower(),
                    "listKind": f"{kind}List",
                },
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
            },
        }
        for group, kind, plural in THIRD_PARTY_KINDS
    ]


def install_third_party_crds(simulator: Any) -> None:
    apply_server_side(simulator, third_party_crds(), "default")


def kubectl(simulator: Any, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(simulator.kubeconfig_path)}
    return subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env, check=False, timeout=120
    )


def apply_server_side(simulator: Any, manifests: Iterable[dict[str, Any]], namespace: str) -> str:
    """`kubectl apply --server-side` of the manifests into `namespace` (created first); returns kubectl's
    output, or raises with its error."""
    # kubectl refuses an object of another namespace than -n's (Trainer's public ConfigMap lives in
    # kubeflow-system): those go in a second apply, after the first created their namespace.
    by_namespace: dict[str, list[dict[str, Any]]] = {namespace: []}
    for manifest in manifests:
        own = (manifest.get("metadata") or {}).get("namespace") or namespace
        by_namespace.setdefault(own, []).append(manifest)
    output = ""
    for target, group in by_namespace.items():
        simulator.store.ensure_namespace(target)
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "manifests.yaml"
            path.write_text(yaml.safe_dump_all(group, sort_keys=False))
            apply = ["apply", "--server-side", "--field-manager=argoml-install", "-n", target]
            result = kubectl(simulator, *apply, "-f", str(path))
        if result.returncode != 0:
            raise AssertionError(f"kubectl apply --server-side failed:\n{result.stdout}\n{result.stderr}")
        output += result.stdout
    return output
