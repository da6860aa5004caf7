"""Data keys of ConfigMaps and Secrets, and the field selectors each kind supports, as the API server
checks them (validation.go's ValidateConfigMap/ValidateSecret; each kind's field label conversion)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from kubesim.builtins.fielderrors import config_key_problems
from kubesim.tests.conftest import WIDGET_GROUP


@pytest.mark.parametrize("key", ["config.yaml", "KEY_NAME", "key-name", ".hidden", "a" * 253])
def test_valid_config_keys(key: str) -> None:
    assert config_key_problems(key) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("a/b", "regex used for validation is '[-._a-zA-Z0-9]+'"),
        ("with space", "a valid config key must consist of alphanumeric characters"),
        (".", "must not be '.'"),
        ("..", "must not be '..'"),
        ("..data", "must not start with '..'"),
        ("a" * 254, "must be no more than 253 characters"),
    ],
)
def test_invalid_config_keys(key: str, problem: str) -> None:
    assert any(problem in found for found in config_key_problems(key))


def test_kubectl_refuses_a_configmap_with_a_bad_key(kubectl) -> None:
    """ "Each key must consist of alphanumeric characters, '-', '_' or '.'" (ConfigMap API reference). kubectl
    create configmap checks this itself (in the same words); a manifest is checked by the server."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {dir/file: x}\n"
    result = kubectl("apply", "-f", "-", stdin=manifest, check=False)
    assert result.returncode != 0
    assert 'ConfigMap "bad" is invalid: data[dir/file]: Invalid value: "dir/file": ' in result.stderr
    assert (
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
        "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
    ) in result.stderr


def test_secret_keys_and_data_binary_overlap(core, namespace: str) -> None:
    with pytest.raises(ApiException) as error:
        core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"a b": "x"}})
    assert error.value.status == 422
    assert json.loads(error.value.body)["details"]["causes"][0]["field"] == "data[a b]"
    both = {"metadata": {"name": "c"}, "data": {"k": "1"}, "binaryData": {"k": "MQ=="}}
    with pytest.raises(ApiException) as overlap:
        core.create_namespaced_config_map(namespace, both)
    cause = json.loads(overlap.value.body)["details"]["causes"][0]
    assert cause["message"] == 'Invalid value: "k": duplicate of key present in binaryData'


def names(items: list[Any]) -> list[str]:
    return sorted(item.metadata.name for item in items)


def test_supported_pod_field_selectors_work(core, namespace: str) -> None:
    for name, policy in (("a", "Never"), ("b", "Always")):
        manifest = {
            "metadata": {"name": name},
            "spec": {"restartPolicy": policy, "containers": [{"name": "m", "image": "x"}]},
        }
        core.create_namespaced_pod(namespace, manifest)
    assert names(core.list_namespaced_pod(namespace, field_selector="spec.restartPolicy=Never").items) == [
        "a"
    ]
    found = core.list_namespaced_pod(namespace, field_selector="spec.schedulerName=default-scheduler").items
    assert names(found) == ["a", "b"]


@pytest.mark.parametrize(
    ("path", "selector"),
    [
        ("/api/v1/namespaces/{ns}/pods", "spec.containers=x"),
        ("/api/v1/namespaces/{ns}/configmaps", "data.a=1"),
        ("/api/v1/namespaces/{ns}/secrets", "metadata.labels=x"),
        ("/apis/apps/v1/namespaces/{ns}/deployments", "spec.replicas=1"),
    ],
)
def test_unsupported_field_selectors_are_bad_requests(http, namespace: str, path: str, selector: str) -> None:
    """ "Supported field selectors vary by Kubernetes resource type. All resource types support the
    metadata.name and metadata.namespace fields. Using unsupported field selectors produces an error" (Field
    Selectors), e.g. `Error from server (BadRequest): Unable to find "ingresses" that match label selector "",
    field selector "foo.bar=baz": "foo.bar" is not a known field selector: only "metadata.name",
    "metadata.namespace"`; the API server's own words are `field label not supported: foo.bar`."""
    response = http("GET", path.format(ns=namespace), params={"fieldSelector": selector})
    assert response.status_code == 400
    assert response.json()["message"] == f"field label not supported: {selector.split('=')[0]}"
    watched = http("GET", path.format(ns=namespace), params={"fieldSelector": selector, "watch": "true"})
    assert watched.status_code == 400


def test_kubectl_reports_an_unsupported_field_selector(kubectl) -> None:
    result = kubectl("get", "configmaps", "--field-selector=data.a=1", check=False)
    assert result.returncode != 0
    assert "field label not supported: data.a" in result.stderr


def test_kind_specific_selectors(http, namespace: str) -> None:
    for path, selector in (
        (f"/api/v1/namespaces/{namespace}/secrets", "type=Opaque"),
        ("/api/v1/namespaces", "status.phase=Active"),
        ("/api/v1/nodes", "spec.unschedulable=false"),
        (f"/apis/batch/v1/namespaces/{namespace}/jobs", "status.successful=1"),
        (f"/apis/apps/v1/namespaces/{namespace}/replicasets", "status.replicas=0"),
        (f"/api/v1/namespaces/{namespace}/events", "involvedObject.uid=x"),
        (f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", "regarding.uid=x"),
        (f"/apis/apps/v1/namespaces/{namespace}/deployments", "metadata.name=x"),
    ):
        assert http("GET", path, params={"fieldSelector": selector}).status_code == 200, (path, selector)


def test_custom_resources_select_on_their_selectable_fields(http, cluster, namespace: str) -> None:
    """ "selectableFields specifies paths to fields that may be used as field selectors" (CRD v1, 1.32 GA)."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{WIDGET_GROUP}"},
        "spec": {
            "group": WIDGET_GROUP,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"color": {"type": "string"}, "size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    assert (
        http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).status_code == 201
    )
    try:
        base = f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/gadgets"
        for name, color in (("red", "red"), ("blue", "blue")):
            body = {
                "apiVersion": f"{WIDGET_GROUP}/v1",
                "kind": "Gadget",
                "metadata": {"name": name},
                "spec": {"color": color, "size": 1},
            }
            assert http("POST", base, json=body).status_code == 201
        selected = http("GET", base, params={"fieldSelector": "spec.color=red"}).json()["items"]
        assert [item["metadata"]["name"] for item in selected] == ["red"]
        refused = http("GET", base, params={"fieldSelector": "spec.size=1"})
        assert refused.status_code == 400
        assert refused.json()["message"] == "field label not supported: spec.size"
    finally:
        http("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.{WIDGET_GROUP}")
