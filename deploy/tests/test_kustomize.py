"""The plain kustomize base: rendered from the chart (never stale), built by kubectl's kustomize, valid
against the Kubernetes schemas, applied to kubesim server-side, and free of Helm's machinery."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from deploy import render_kustomize

from .kubesim_apply import apply_server_side, kubectl
from .manifests import (
    DEPLOY,
    containers,
    kustomize_build,
    named,
    of_kind,
    pod_specs,
    render_chart,
    schema_errors,
)

EXAMPLE = DEPLOY / "kustomize" / "example"


def test_the_base_is_what_the_chart_renders():
    assert not render_kustomize.stale(), "run .venv/bin/python deploy/render_kustomize.py"


def test_the_base_builds_and_validates_against_the_kubernetes_schemas():
    manifests = kustomize_build()
    assert not schema_errors(manifests)
    assert {m["kind"] for m in manifests} >= {"Namespace", "CustomResourceDefinition", "Deployment", "Job"}


def test_the_base_has_the_charts_objects_without_helm_hooks_or_labels():
    base = kustomize_build()
    for manifest in base:
        annotations = manifest["metadata"].get("annotations") or {}
        labels = manifest["metadata"].get("labels") or {}
        assert not [key for key in annotations if key.startswith("helm.sh/")], manifest["metadata"]["name"]
        assert "helm.sh/chart" not in labels
    chart = render_chart({"migrations": {"perRevision": False}})
    chart_objects = {(m["kind"], m["metadata"]["name"]) for m in chart}
    base_objects = {(m["kind"], m["metadata"]["name"]) for m in base}
    # The base writes the webhook certificate with one plain Job instead of the chart's two hooks.
    assert chart_objects - base_objects == {("Job", "argoml-webhook-certs-secret")}
    assert base_objects - chart_objects == {("Namespace", "argoml")} | {
        ("CustomResourceDefinition", m["metadata"]["name"]) for m in of_kind(base, "CustomResourceDefinition")
    }
    certs = named(base, "Job", "argoml-webhook-certs")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--skip-configurations" not in certs


def test_the_base_applies_cleanly_to_kubesim_server_side_and_every_object_is_stored(kubesim):
    manifests = kustomize_build()
    output = apply_server_side(kubesim, manifests, "argoml")
    assert output.count("serverside-applied") == len(manifests)
    missing = [ref for ref in map(_reference, manifests) if kubectl(kubesim, "get", *ref).returncode != 0]
    assert not missing, f"applied but not stored: {missing}"


def test_kubectl_apply_prune_with_its_default_allow_list_deletes_what_left_the_base(kubesim):
    """`kubectl apply --prune -l <selector>` (client-side) lists every kind of its default allow-list
    (core ConfigMap, Endpoints, Namespace, PersistentVolume(Claim), Pod, ReplicationController, Secret,
    Service; apps DaemonSet, Deployment, ReplicaSet, StatefulSet; batch Job, CronJob; networking Ingress)
    and deletes the labelled objects no longer in the files."""
    selector = "app.kubernetes.io/part-of=argoml"
    manifests = [
        m for m in kustomize_build() if (m["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of")
    ]
    assert ("ConfigMap", "argoml-config") in {(m["kind"], m["metadata"]["name"]) for m in manifests}
    kept = [m for m in manifests if (m["kind"], m["metadata"]["name"]) != ("ConfigMap", "argoml-config")]
    kubesim.store.ensure_namespace("argoml")
    with tempfile.TemporaryDirectory() as scratch:
        everything, fewer = Path(scratch) / "base.yaml", Path(scratch) / "fewer.yaml"
        everything.write_text(yaml.safe_dump_all(manifests, sort_keys=False))
        fewer.write_text(yaml.safe_dump_all(kept, sort_keys=False))
        # Prune reads the last-applied annotation of client-side apply (kubectl refuses it server-side).
        assert kubectl(kubesim, "apply", "-l", selector, "-f", str(everything)).returncode == 0
        result = kubectl(kubesim, "apply", "--prune", "-l", selector, "-f", str(fewer))
    assert result.returncode == 0, result.stderr
    assert "configmap/argoml-config pruned" in result.stdout
    assert kubectl(kubesim, "get", "-n", "argoml", "configmap", "argoml-config").returncode != 0
    assert kubectl(kubesim, "get", "-n", "argoml", "deployment.apps", "argoml-web").returncode == 0


def _reference(manifest: dict[str, Any]) -> list[str]:
    """`kubectl get` arguments naming one manifest's object: kind.group, name and its namespace."""
    group = manifest["apiVersion"].rpartition("/")[0]
    kind = f"{manifest['kind']}.{group}" if group else manifest["kind"]
    namespace = manifest["metadata"].get("namespace")
    return [kind, manifest["metadata"]["name"], *(["-n", namespace] if namespace else [])]


def test_the_example_overlay_changes_the_image_replicas_and_a_setting():
    manifests = kustomize_build(EXAMPLE)
    assert not schema_errors(manifests)
    for _, pod in pod_specs(manifests):
        for container in containers(pod):
            assert container["image"] == "registry.example.com/platform/argoml:0.1.0"
    assert named(manifests, "Deployment", "argoml-worker")["spec"]["replicas"] == 4
    assert (
        named(manifests, "ConfigMap", "argoml-config")["data"]["TENSORBOARD_BASE_URL"]
        == "https://tensorboards.ml.example.com"
    )
