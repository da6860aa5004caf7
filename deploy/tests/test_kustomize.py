"""The plain kustomize base: rendered from the chart (never stale), built by kubectl's kustomize, valid
against the Kubernetes schemas, applied to kubesim server-side, and free of Helm's machinery."""

from __future__ import annotations

from deploy import render_kustomize

from .kubesim_apply import apply_server_side, serve_missing_kinds
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


def test_the_base_applies_cleanly_to_kubesim_server_side(kubesim):
    serve_missing_kinds(kubesim)
    manifests = kustomize_build()
    output = apply_server_side(kubesim, manifests, "argoml")
    assert output.count("serverside-applied") == len(manifests)


def test_the_example_overlay_changes_the_image_replicas_and_a_setting():
    manifests = kustomize_build(EXAMPLE)
    assert not schema_errors(manifests)
    for _, pod in pod_specs(manifests):
        for container in containers(pod):
            assert container["image"] == "registry.example.com/platform/argoml:0.1.0"
    assert named(manifests, "Deployment", "argoml-worker")["spec"]["replicas"] == 4
    assert (
        named(manifests, "ConfigMap", "argoml-config")["data"]["TENSORBOARD_BASE_URL"]
        == "https://ml.example.com"
    )
