"""Contract: bad requests get the apiserver's status code and a Status body, never a traceback."""

from __future__ import annotations

import pytest


def assert_status(response, code: int, reason: str) -> None:
    assert response.status_code == code
    body = response.json()
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body["reason"] == reason
    assert "Traceback" not in response.text


def test_malformed_json_is_400(http, namespace: str) -> None:
    response = http(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert_status(response, 400, "BadRequest")


def test_a_body_that_is_not_an_object_is_400(http, namespace: str) -> None:
    response = http("POST", f"/api/v1/namespaces/{namespace}/configmaps", json=[1, 2])
    assert_status(response, 400, "BadRequest")


def test_a_wrong_kind_in_the_body_is_400(http, namespace: str) -> None:
    response = http(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}},
    )
    assert_status(response, 400, "BadRequest")


def test_an_unknown_resource_is_404(http) -> None:
    assert_status(http("GET", "/api/v1/namespaces/default/gizmos"), 404, "NotFound")
    assert_status(http("GET", "/apis/nothing.example/v1/things"), 404, "NotFound")


def test_an_unknown_group_version_is_404(http) -> None:
    assert http("GET", "/apis/nothing.example/v1").status_code == 404


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/vnd.kubernetes.protobuf", "application/xml"]
)
def test_an_unsupported_body_content_type_is_415(http, namespace: str, content_type: str) -> None:
    response = http(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=b'{"metadata":{"name":"x"}}',
        headers={"Content-Type": content_type},
    )
    assert_status(response, 415, "UnsupportedMediaType")


def test_a_patch_with_an_unknown_patch_content_type_is_415(http, core, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "p"}})
    response = http(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/p",
        data=b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert_status(response, 415, "UnsupportedMediaType")


def test_yaml_bodies_are_accepted(http, namespace: str) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n"
    response = http(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=body,
        headers={"Content-Type": "application/yaml"},
    )
    assert response.status_code == 201
    assert response.json()["data"] == {"a": "b"}


def test_an_invalid_label_selector_is_400(http, namespace: str) -> None:
    response = http("GET", f"/api/v1/namespaces/{namespace}/pods", params={"labelSelector": "a in b"})
    assert_status(response, 400, "BadRequest")


def test_a_client_that_accepts_only_protobuf_gets_406(http, namespace: str) -> None:
    response = http(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        headers={"Accept": "application/vnd.kubernetes.protobuf"},
    )
    assert_status(response, 406, "NotAcceptable")


def test_post_to_a_named_object_is_405(http, core, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "named"}})
    response = http("POST", f"/api/v1/namespaces/{namespace}/configmaps/named", json={})
    assert_status(response, 405, "MethodNotAllowed")


def test_keep_alive_serves_many_requests_on_one_connection(http) -> None:
    responses = [http("GET", "/version") for _ in range(20)]
    assert all(r.status_code == 200 for r in responses)
    assert responses[0].headers.get("Connection", "").lower() != "close"
