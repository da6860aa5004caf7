"""Contract: CRDs serve new resources, validate against their structural schema, and have /status."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubesim.tests.conftest import WIDGET_GROUP, wait_established, widget_crd


def widget(name: str, **spec) -> dict:
    return {
        "apiVersion": f"{WIDGET_GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"color": "red", **spec},
    }


def create(custom, namespace: str, body: dict, **kwargs) -> dict:
    return custom.create_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", body, **kwargs)


def causes(error: ApiException) -> dict[str, str]:
    return {c["field"]: c["message"] for c in json.loads(error.body)["details"]["causes"]}


def test_a_crd_serves_its_resource(custom, widgets: str, namespace: str) -> None:
    created = create(custom, namespace, widget("w1", size=2))
    assert created["metadata"]["uid"]
    fetched = custom.get_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", "w1")
    assert fetched["spec"] == {"color": "red", "size": 2}


def test_a_whole_float_is_stored_and_read_back_as_an_integer(custom, widgets: str, namespace: str) -> None:
    """Python clients send `2.0` for a float; the apiserver's JSON round trip stores the integer."""
    created = create(custom, namespace, widget("w2", size=2.0))
    assert created["spec"]["size"] == 2
    fetched = custom.get_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", "w2")
    assert type(fetched["spec"]["size"]) is int


def test_schema_violations_are_422_with_field_paths(custom, widgets: str, namespace: str) -> None:
    bad = {
        "apiVersion": f"{WIDGET_GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "bad"},
        "spec": {"size": 0, "parts": [{"name": 1}]},
    }
    with pytest.raises(ApiException) as caught:
        create(custom, namespace, bad)
    assert caught.value.status == 422
    found = causes(caught.value)
    assert set(found) == {"spec.color", "spec.size", "spec.parts[0].name"}
    assert "Required value" in found["spec.color"]
    assert "greater than or equal to 1" in found["spec.size"]
    assert "must be of type string" in found["spec.parts[0].name"]


def test_enum_and_max_items_are_enforced(custom, widgets: str, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        create(custom, namespace, widget("many", color="green", parts=[{}, {}, {}, {}]))
    assert set(causes(caught.value)) == {"spec.color", "spec.parts"}


def test_defaults_are_applied_and_unknown_fields_pruned(custom, widgets: str, namespace: str) -> None:
    created = create(custom, namespace, widget("pruned", extra="dropped", free={"anything": {"goes": 1}}))
    assert created["spec"] == {"color": "red", "size": 3, "free": {"anything": {"goes": 1}}}


def test_strict_field_validation_rejects_unknown_fields(http, widgets: str, namespace: str) -> None:
    response = http(
        "POST",
        f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/widgets",
        params={"fieldValidation": "Strict"},
        json=widget("strict", extra=1),
    )
    assert response.status_code == 400
    assert 'unknown field "spec.extra"' in response.json()["message"]


def test_warn_field_validation_returns_a_warning_header(http, widgets: str, namespace: str) -> None:
    response = http(
        "POST",
        f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/widgets",
        params={"fieldValidation": "Warn"},
        json=widget("warned", extra=1),
    )
    assert response.status_code == 201
    assert "spec.extra" in response.headers["Warning"]


def test_the_main_endpoint_ignores_status(custom, widgets: str, namespace: str) -> None:
    created = create(custom, namespace, {**widget("st"), "status": {"phase": "Ignored"}})
    assert "status" not in created or created["status"].get("phase") != "Ignored"
    patched = custom.patch_namespaced_custom_object(
        WIDGET_GROUP, "v1", namespace, "widgets", "st", {"status": {"phase": "Nope"}, "spec": {"size": 5}}
    )
    assert patched["spec"]["size"] == 5
    assert (patched.get("status") or {}).get("phase") != "Nope"


def test_the_status_subresource_changes_only_status(custom, widgets: str, namespace: str) -> None:
    create(custom, namespace, widget("sub", size=1))
    patched = custom.patch_namespaced_custom_object_status(
        WIDGET_GROUP, "v1", namespace, "widgets", "sub", {"status": {"phase": "Running"}, "spec": {"size": 9}}
    )
    assert patched["status"] == {"phase": "Running"}
    assert patched["spec"]["size"] == 1
    assert patched["metadata"]["generation"] == 1


def test_spec_changes_bump_generation_but_status_changes_do_not(custom, widgets: str, namespace: str) -> None:
    create(custom, namespace, widget("gen"))
    status = custom.patch_namespaced_custom_object_status(
        WIDGET_GROUP, "v1", namespace, "widgets", "gen", {"status": {"phase": "A"}}
    )
    assert status["metadata"]["generation"] == 1
    spec = custom.patch_namespaced_custom_object(
        WIDGET_GROUP, "v1", namespace, "widgets", "gen", {"spec": {"size": 7}}
    )
    assert spec["metadata"]["generation"] == 2


def test_a_deletion_held_by_a_finalizer_bumps_generation_once(custom, widgets: str, namespace: str) -> None:
    """As the apiserver's markAsDeleting: the first deletionTimestamp of a kind without graceful deletion
    is a new generation; deleting again while held is not."""
    create(
        custom, namespace, {**widget("held"), "metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    )
    custom.delete_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", "held")
    custom.delete_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", "held")
    held = custom.get_namespaced_custom_object(WIDGET_GROUP, "v1", namespace, "widgets", "held")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["generation"] == 2
    custom.patch_namespaced_custom_object(
        WIDGET_GROUP, "v1", namespace, "widgets", "held", {"metadata": {"finalizers": None}}
    )


def test_cluster_scoped_crds_and_deleting_a_crd_stops_serving_it(cluster, http) -> None:
    extensions = client.ApiextensionsV1Api(cluster.api)
    extensions.create_custom_resource_definition(widget_crd(scope="Cluster", plural="gadgets", kind="Gadget"))
    wait_established(cluster, "gadgets")
    custom = client.CustomObjectsApi(cluster.api)
    created = custom.create_cluster_custom_object(
        WIDGET_GROUP,
        "v1",
        "gadgets",
        {
            "apiVersion": f"{WIDGET_GROUP}/v1",
            "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"color": "blue"},
        },
    )
    assert "namespace" not in created["metadata"]
    extensions.delete_custom_resource_definition(f"gadgets.{WIDGET_GROUP}")
    for _ in range(100):
        if http("GET", f"/apis/{WIDGET_GROUP}/v1/gadgets").status_code == 404:
            break
    assert http("GET", f"/apis/{WIDGET_GROUP}/v1/gadgets").status_code == 404


def test_an_invalid_crd_is_422(cluster) -> None:
    extensions = client.ApiextensionsV1Api(cluster.api)
    broken = widget_crd(plural="brokens", kind="Broken")
    broken["metadata"]["name"] = "wrong.name"
    broken["spec"]["versions"][0]["storage"] = False
    with pytest.raises(ApiException) as caught:
        extensions.create_custom_resource_definition(broken)
    assert caught.value.status == 422
    assert {"metadata.name", "spec.versions"} <= set(causes(caught.value))


def test_strategic_merge_patch_on_a_custom_resource_is_415(
    http, custom, widgets: str, namespace: str
) -> None:
    create(custom, namespace, widget("smp"))
    response = http(
        "PATCH",
        f"/apis/{WIDGET_GROUP}/v1/namespaces/{namespace}/widgets/smp",
        data=b'{"spec":{"size":2}}',
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status_code == 415
    assert response.json()["reason"] == "UnsupportedMediaType"
