"""The deployment's manifests as the tests see them: the Helm chart rendered by Helm's own engine, the
kustomize base built by kubectl's, and the checks every manifest must pass.

Helm renders through `helm_python` (the helm-python-sdk wheel: Helm's Go SDK behind a C ABI), so the
templates are executed by real Helm, not by an imitation; kustomize is the one built into kubectl.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
CHART = DEPLOY / "helm" / "argoml"
KUSTOMIZE_BASE = DEPLOY / "kustomize" / "base"
KUBECTL = Path(sys.executable).parent / "kubectl"
RELEASE = "argoml"
NAMESPACE = "argoml"
#: The oldest Kubernetes the deployment supports (Chart.yaml kubeVersion) and the newest schemas we have.
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")
#: Values files rendered by the tests, by name (None: the chart's defaults).
VALUES_FILES: dict[str, Path | None] = {
    "default": None,
    "production": CHART / "ci" / "production-values.yaml",
    "kind": CHART / "ci" / "kind-values.yaml",
}
#: Kinds of other projects (cert-manager, Prometheus Operator): no Kubernetes schema to validate against.
THIRD_PARTY_GROUPS = ("cert-manager.io", "monitoring.coreos.com")
Manifest = dict[str, Any]


def load_values(name: str) -> dict[str, Any]:
    path = VALUES_FILES[name]
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path else {}


def documents(text: str) -> list[Manifest]:
    """The non-empty YAML documents of a manifest stream."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render_chart(
    values: dict[str, Any] | None = None,
    *,
    namespace: str = NAMESPACE,
    release: str = RELEASE,
    revision: int = 1,
    is_upgrade: bool = False,
) -> list[Manifest]:
    """`helm template` of the chart: every manifest its templates produce (hooks included, CRDs not)."""
    import helm_python

    with helm_python.Chart.load(str(CHART)) as chart:
        rendered = chart.render(
            values or {},
            name=release,
            namespace=namespace,
            revision=revision,
            is_install=not is_upgrade,
            is_upgrade=is_upgrade,
        )
    manifests: list[Manifest] = []
    for path in sorted(rendered):
        if path.endswith("NOTES.txt"):
            continue
        manifests += documents(rendered[path])
    return manifests


def render_against(
    simulator: Any,
    values: dict[str, Any] | None = None,
    *,
    namespace: str = NAMESPACE,
    release: str = RELEASE,
) -> dict[str, str]:
    """The chart rendered as `helm install` renders it, its `lookup`s answered by `simulator` (kubesim):
    template path → text. Raises helm_python.HelmError with the message of a template's `fail`."""
    import helm_python

    with helm_python.Chart.load(str(CHART)) as chart:
        config = helm_python.Config(kubeconfig_path=str(simulator.kubeconfig_path))
        return config.render(chart, values or {}, name=release, namespace=namespace, is_install=True)


def render_notes(values: dict[str, Any] | None = None) -> str:
    import helm_python

    with helm_python.Chart.load(str(CHART)) as chart:
        rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def chart_crds() -> list[Manifest]:
    return [doc for path in sorted((CHART / "crds").glob("*.yaml")) for doc in documents(path.read_text())]


@cache
def kustomize_build_text(directory: Path) -> str:
    result = subprocess.run(
        [str(KUBECTL), "kustomize", str(directory)], capture_output=True, text=True, check=False, timeout=60
    )
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{result.stderr}")
    return result.stdout


def kustomize_build(directory: Path = KUSTOMIZE_BASE) -> list[Manifest]:
    return documents(kustomize_build_text(directory))


def of_kind(manifests: Iterable[Manifest], *kinds: str) -> list[Manifest]:
    return [manifest for manifest in manifests if manifest.get("kind") in kinds]


def named(manifests: Iterable[Manifest], kind: str, name: str) -> Manifest:
    for manifest in manifests:
        if manifest.get("kind") == kind and manifest["metadata"]["name"] == name:
            return manifest
    raise AssertionError(f"no {kind} {name} among the manifests")


def pod_specs(manifests: Iterable[Manifest]) -> Iterator[tuple[Manifest, Manifest]]:
    """(workload, pod spec) of every Deployment and Job."""
    for manifest in of_kind(manifests, "Deployment", "Job"):
        yield manifest, manifest["spec"]["template"]["spec"]


def containers(pod_spec: Manifest) -> list[Manifest]:
    return [*pod_spec.get("initContainers", []), *pod_spec.get("containers", [])]


def is_hook(manifest: Manifest) -> bool:
    return "helm.sh/hook" in (manifest["metadata"].get("annotations") or {})


def schema_errors(manifests: Iterable[Manifest], versions: Iterable[str] = KUBERNETES_VERSIONS) -> list[str]:
    """What the Kubernetes JSON schemas (strict: no unknown fields) reject, for each version."""
    import kubernetes_validate

    errors = []
    for manifest in manifests:
        api_version = str(manifest.get("apiVersion", ""))
        if api_version.split("/")[0] in THIRD_PARTY_GROUPS:
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                where = "/".join(str(part) for part in error.path)
                name = f"{manifest['kind']} {manifest['metadata'].get('name')}"
                errors.append(f"{version} {name}: {where}: {error.message}")
            except kubernetes_validate.SchemaNotFoundError:
                errors.append(f"{version}: no schema for {api_version} {manifest['kind']}")
    return errors
