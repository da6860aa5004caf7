"""Contract: discovery documents and the OpenAPI v3 that kubectl uses."""

from __future__ import annotations

from kubernetes import client


def test_version_reports_a_kubernetes_version(cluster) -> None:
    info = client.VersionApi(cluster.api).get_code()
    assert info.major == "1"
    assert info.git_version.startswith("v1.")


def test_core_api_lists_v1_and_its_resources(http) -> None:
    assert http("GET", "/api").json()["versions"] == ["v1"]
    resources = {r["name"]: r for r in http("GET", "/api/v1").json()["resources"]}
    assert resources["pods"]["kind"] == "Pod"
    assert resources["pods"]["namespaced"] is True
    assert "po" in resources["pods"]["shortNames"]
    assert resources["namespaces"]["namespaced"] is False
    assert "pods/status" in resources
    assert {"create", "get", "list", "watch", "patch", "delete"} <= set(resources["configmaps"]["verbs"])


def test_api_groups_are_listed_with_preferred_versions(cluster) -> None:
    groups = {g.name: g for g in client.ApisApi(cluster.api).get_api_versions().groups}
    for name in (
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
    ):
        assert groups[name].preferred_version.version == "v1"


def test_group_version_lists_its_resources(http) -> None:
    document = http("GET", "/apis/apps/v1").json()
    assert document["groupVersion"] == "apps/v1"
    assert "deployments" in {r["name"] for r in document["resources"]}
    assert http("GET", "/apis/apps").json()["preferredVersion"]["groupVersion"] == "apps/v1"


def test_a_crd_appears_in_discovery(http, widgets: str) -> None:
    groups = {g["name"] for g in http("GET", "/apis").json()["groups"]}
    assert "kubesim.test" in groups
    resources = {r["name"]: r for r in http("GET", "/apis/kubesim.test/v1").json()["resources"]}
    assert resources["widgets"]["kind"] == "Widget"
    assert resources["widgets"]["singularName"] == "widget"
    assert resources["widgets"]["shortNames"] == ["wid"]
    assert "widgets/status" in resources


def test_openapi_v3_indexes_every_group_version(http, widgets: str) -> None:
    paths = http("GET", "/openapi/v3").json()["paths"]
    assert "api/v1" in paths
    assert "apis/apps/v1" in paths
    document = http("GET", "/" + paths["apis/kubesim.test/v1"]["serverRelativeURL"].lstrip("/")).json()
    patch = document["paths"]["/apis/kubesim.test/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}


def test_openapi_v2_is_served_for_clients_that_fall_back_to_it(http) -> None:
    protobuf = http(
        "GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    )
    assert protobuf.status_code == 200
    assert b"2.0" in protobuf.content
    assert http("GET", "/openapi/v2").json()["swagger"] == "2.0"
