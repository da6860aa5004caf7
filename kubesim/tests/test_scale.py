"""The scale subresource (autoscaling/v1 Scale) of Deployments and of CRDs that declare it, through the API,
the real kubectl and RBAC. Contract tests: they could run against a real cluster."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client

from kubesim.errors import ApiError
from kubesim.resources import ScalePaths
from kubesim.scale import desired_replicas, scale_of, selector_string, with_replicas
from kubesim.tests.conftest import WIDGET_GROUP, Cluster, SecureCluster, wait_established
from kubesim.tests.test_auth import _kubeconfig_for, bind, kubectl, sa_subject, service_account

Http = Callable[..., requests.Response]

GIZMO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{WIDGET_GROUP}"},
    "spec": {
        "group": WIDGET_GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.count",
                        "statusReplicasPath": ".status.running",
                        "labelSelectorPath": ".status.selector",
                    },
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {"count": {"type": "integer", "maximum": 10}},
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "running": {"type": "integer"},
                                    "selector": {"type": "string"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}],
        },
        "template": {
            "metadata": {"labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1"}]},
        },
    },
}


@pytest.fixture(scope="module")
def gizmos(cluster: Cluster) -> Iterator[str]:
    extensions = client.ApiextensionsV1Api(cluster.api)
    extensions.create_custom_resource_definition(GIZMO_CRD)
    wait_established(cluster, "gizmos")
    yield "gizmos"
    extensions.delete_custom_resource_definition(f"gizmos.{WIDGET_GROUP}")


def _deployment(apps: client.AppsV1Api, namespace: str) -> str:
    apps.create_namespaced_deployment(namespace, DEPLOYMENT)
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/web"


def _gizmo(http: Http, namespace: str, **spec: Any) -> str:
    base = f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/gizmos"
    body = {"apiVersion": f"{WIDGET_GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "g"}, "spec": spec}
    assert http("POST", base, json=body).status_code == 201
    return f"{base}/g"


# --- Deployments ---


def test_discovery_lists_the_scale_subresource_as_an_autoscaling_v1_scale(http: Http) -> None:
    """kubectl's scale client reads the Scale kind from discovery: `deployments/scale` is served as
    `autoscaling/v1` `Scale` with the verbs get, patch and update."""
    resources = http("GET", "/apis/apps/v1").json()["resources"]
    entry = next(r for r in resources if r["name"] == "deployments/scale")
    assert (entry["group"], entry["version"], entry["kind"]) == ("autoscaling", "v1", "Scale")
    assert sorted(entry["verbs"]) == ["get", "patch", "update"]


def test_a_deployments_scale_shows_its_replicas_and_selector(
    apps: client.AppsV1Api, http: Http, namespace: str
) -> None:
    """The API reference: Scale's "spec.replicas: desired number of instances for the scaled object",
    "status.replicas: actual number of observed instances", "status.selector: label query over pods that
    should match the replicas count … in string form"."""
    path = _deployment(apps, namespace)
    scale = http("GET", path + "/scale").json()
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["metadata"]["name"] == "web"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 0, "selector": "app=web,tier in (edge,front)"}


def test_updating_the_scale_sets_the_deployments_replicas(
    apps: client.AppsV1Api, http: Http, namespace: str
) -> None:
    """A PUT of a Scale changes only the object's replicas (a spec change: the generation moves), and
    the writer's managedFields entry names the `scale` subresource."""
    path = _deployment(apps, namespace)
    current = http("GET", path + "/scale").json()
    current["spec"]["replicas"] = 5
    answer = http("PUT", path + "/scale", json=current, params={"fieldManager": "hpa"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["spec"]["replicas"] == 5
    deployment = http("GET", path).json()
    assert deployment["spec"]["replicas"] == 5
    assert deployment["metadata"]["generation"] == 2
    entry = next(e for e in deployment["metadata"]["managedFields"] if e["manager"] == "hpa")
    assert entry["subresource"] == "scale"


def test_a_stale_scale_is_a_conflict_and_negative_replicas_are_invalid(
    apps: client.AppsV1Api, http: Http, namespace: str
) -> None:
    """A Scale carrying an old resourceVersion is a precondition that fails with 409; replicas below zero
    answer 422 naming `spec.replicas`."""
    path = _deployment(apps, namespace)
    stale = http("GET", path + "/scale").json()
    apps.patch_namespaced_deployment("web", namespace, {"metadata": {"labels": {"x": "y"}}})
    stale["spec"]["replicas"] = 4
    assert http("PUT", path + "/scale", json=stale).status_code == 409
    negative = http(
        "PATCH",
        path + "/scale",
        data=json.dumps({"spec": {"replicas": -1}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert negative.status_code == 422
    body = negative.json()
    assert body["details"]["causes"][0]["field"] == "spec.replicas"
    assert "must be greater than or equal to 0" in body["message"]
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 2


def test_scale_takes_no_apply_patch(apps: client.AppsV1Api, http: Http, namespace: str) -> None:
    """kubesim answers an apply patch on `/scale` with 415 (a documented difference: upstream applies it)."""
    path = _deployment(apps, namespace)
    answer = http(
        "PATCH",
        path + "/scale",
        data=b"spec: {replicas: 3}",
        headers={"Content-Type": "application/apply-patch+yaml"},
        params={"fieldManager": "x"},
    )
    assert answer.status_code == 415
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 2


def test_kubectl_scale_deployment(apps: client.AppsV1Api, kubectl: Any, namespace: str) -> None:
    """The kubectl reference: "Set a new size for a deployment, replica set, replication controller, or
    stateful set" — `kubectl scale --replicas=3 deployment/mysql`; `--current-replicas` is a
    precondition."""
    _deployment(apps, namespace)
    scaled = kubectl("scale", "deployment", "web", "--replicas=3")
    assert "deployment.apps/web scaled" in scaled.stdout
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 3
    refused = kubectl("scale", "deployment", "web", "--current-replicas=7", "--replicas=1", check=False)
    assert refused.returncode != 0
    assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 3


# --- custom resources ---


def test_a_custom_resources_scale_reads_the_declared_paths(
    gizmos: str, http: Http, custom: client.CustomObjectsApi, namespace: str
) -> None:
    """The CRD reference: statusReplicasPath — "If there is no value under the given path in the custom
    resource, the status replica value in the /scale subresource will default to 0"; labelSelectorPath —
    "… will default to the empty string"."""
    path = _gizmo(http, namespace, count=2)
    assert http("GET", path + "/scale").json()["status"] == {"replicas": 0}
    custom.patch_namespaced_custom_object_status(
        WIDGET_GROUP, "v1", namespace, gizmos, "g", {"status": {"running": 1, "selector": "app=g"}}
    )
    scale = http("GET", path + "/scale").json()
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 1, "selector": "app=g"}


def test_a_custom_resource_without_spec_replicas_cannot_show_its_scale(
    gizmos: str, http: Http, namespace: str
) -> None:
    """The CRD reference: specReplicasPath — "If there is no value under the given path in the custom
    resource, the /scale subresource will return an error on GET"."""
    path = _gizmo(http, namespace)
    answer = http("GET", path + "/scale")
    assert answer.status_code == 500
    assert '"spec.count"' in answer.json()["message"] or ".spec.count" in answer.json()["message"]


def test_kubectl_scale_a_custom_resource_is_validated_by_its_schema(
    gizmos: str, http: Http, kubectl: Any, namespace: str
) -> None:
    """Scaling writes the spec replicas path of the custom resource, so the CRD's schema applies (here a
    `maximum: 10`)."""
    path = _gizmo(http, namespace, count=1)
    assert "gizmo.kubesim.test/g scaled" in kubectl("scale", "gizmo", "g", "--replicas=4").stdout
    assert http("GET", path).json()["spec"]["count"] == 4
    too_many = kubectl("scale", "gizmo", "g", "--replicas=11", check=False)
    assert too_many.returncode != 0
    assert "spec.count" in too_many.stderr
    assert http("GET", path).json()["spec"]["count"] == 4


# --- RBAC ---


def test_scaling_needs_the_scale_subresource_in_rbac(secure_cluster: SecureCluster, tmp_path: Path) -> None:
    """The RBAC documentation: subresources are written `deployments/scale`; a rule on `deployments`
    alone does not reach them (the `edit` role lists `deployments/scale` separately)."""
    ns = f"kst-scale-{uuid.uuid4().hex[:8]}"
    admin = secure_cluster.admin
    assert secure_cluster.call(admin, "POST", "/api/v1/namespaces", json={"metadata": {"name": ns}}).ok
    try:
        created = secure_cluster.call(
            admin, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", json=DEPLOYMENT
        )
        assert created.status_code == 201, created.text
        kubeconfig = _kubeconfig_for(secure_cluster, service_account(secure_cluster, ns), tmp_path)
        rule = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch", "update"]}
        bind(secure_cluster, ns, [rule], sa_subject(ns))
        refused = kubectl(kubeconfig, "scale", "deployment", "web", "--replicas=4", "-n", ns)
        assert refused.returncode != 0
        assert 'cannot patch resource "deployments/scale"' in refused.stderr
        scale_rule = {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"]}
        bind(secure_cluster, ns, [scale_rule], sa_subject(ns))
        allowed = kubectl(kubeconfig, "scale", "deployment", "web", "--replicas=4", "-n", ns)
        assert allowed.returncode == 0, allowed.stderr
        path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
        assert secure_cluster.call(admin, "GET", path).json()["spec"]["replicas"] == 4
    finally:
        secure_cluster.call(admin, "DELETE", f"/api/v1/namespaces/{ns}")


# --- the pure half ---


@pytest.mark.parametrize(
    ("selector", "rendered"),
    [
        (None, ""),
        ("a=b", "a=b"),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {
                "matchExpressions": [
                    {"key": "z", "operator": "DoesNotExist"},
                    {"key": "y", "operator": "Exists"},
                    {"key": "x", "operator": "NotIn", "values": ["2", "1"]},
                ]
            },
            "x notin (1,2),y,!z",
        ),
        ({}, ""),
    ],
)
def test_selector_string_renders_label_selectors_as_the_apiserver(selector: Any, rendered: str) -> None:
    assert selector_string(selector) == rendered


PATHS = ScalePaths(".spec.count", ".status.running", ".status.selector")


def test_scale_of_and_with_replicas_follow_the_declared_paths() -> None:
    obj = {"metadata": {"name": "g", "uid": "u", "labels": {"x": "y"}}, "spec": {"count": 2}}
    scale = scale_of(obj, PATHS)
    assert scale["metadata"] == {"name": "g", "uid": "u"}
    assert (scale["spec"], scale["status"]) == ({"replicas": 2}, {"replicas": 0})
    assert with_replicas({"metadata": {}}, PATHS, 3) == {"metadata": {}, "spec": {"count": 3}}
    with pytest.raises(ApiError) as missing:
        scale_of({"metadata": {"name": "g"}, "spec": {}}, PATHS)
    assert missing.value.code == 500


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ([], 400),
        ({"spec": {"replicas": "3"}}, 422),
        ({"spec": {"replicas": True}}, 422),
        ({"spec": {"replicas": -2}}, 422),
    ],
)
def test_desired_replicas_refuses_what_is_not_a_count(body: Any, code: int) -> None:
    with pytest.raises(ApiError) as refused:
        desired_replicas(body, "g")
    assert refused.value.code == code


def test_desired_replicas_defaults_to_zero_as_the_scale_type_does() -> None:
    assert desired_replicas({"spec": {}}, "g") == 0
    assert desired_replicas({"spec": {"replicas": 7}}, "g") == 7
