"""Contract: merge, JSON, strategic merge patches and server-side apply."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes.client import ApiException, CoreV1Api

from kubesim.tests.conftest import pod


def patch(http, path: str, body, content_type: str, **params):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http("PATCH", path, data=data, headers={"Content-Type": content_type}, params=params)


@pytest.fixture
def pod_path(core: CoreV1Api, namespace: str) -> str:
    spec = pod("p")
    spec["spec"]["containers"].append({"name": "side", "image": "envoy", "ports": [{"containerPort": 80}]})
    spec["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    core.create_namespaced_pod(namespace, spec)
    return f"/api/v1/namespaces/{namespace}/pods/p"


@pytest.fixture
def template_path(http, pod_path: str, namespace: str) -> str:
    """A Deployment whose pod template is the pod's spec: a pod's own spec is immutable beyond images, so
    patches that add and remove containers are tried on a template."""
    template = http("GET", pod_path).json()
    labels = {"app": "patched"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": template["spec"]},
        },
    }
    assert (
        http("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", json=deployment).status_code == 201
    )
    return f"/apis/apps/v1/namespaces/{namespace}/deployments/d"


def in_template(pod_spec_patch: dict) -> dict:
    return {"spec": {"template": {"spec": pod_spec_patch}}}


def template_spec(body: dict) -> dict:
    return body["spec"]["template"]["spec"]


def test_merge_patch_merges_maps_and_null_deletes(http, core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "m", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}}
    )
    response = patch(
        http,
        f"/api/v1/namespaces/{namespace}/configmaps/m",
        {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}},
        "application/merge-patch+json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert body["data"] == {"x": "1", "y": "2"}


def test_merge_patch_replaces_lists(http, template_path: str) -> None:
    body = patch(
        http,
        template_path,
        in_template({"containers": [{"name": "only", "image": "x"}]}),
        "application/merge-patch+json",
    ).json()
    assert [c["name"] for c in template_spec(body)["containers"]] == ["only"]


def test_json_patch_applies_operations_in_order(http, template_path: str) -> None:
    containers = "/spec/template/spec/containers"
    operations = [
        {"op": "add", "path": "/metadata/labels", "value": {"new": "yes"}},
        {"op": "replace", "path": f"{containers}/0/image", "value": "alpine"},
        {"op": "remove", "path": f"{containers}/1"},
        {"op": "copy", "from": f"{containers}/0/image", "path": "/metadata/labels/copied"},
        {"op": "test", "path": "/metadata/labels/new", "value": "yes"},
    ]
    body = patch(http, template_path, operations, "application/json-patch+json").json()
    assert body["metadata"]["labels"]["new"] == "yes"
    assert body["metadata"]["labels"]["copied"] == "alpine"
    assert [c["image"] for c in template_spec(body)["containers"]] == ["alpine"]


def test_a_failing_json_patch_test_is_422_and_changes_nothing(http, pod_path: str) -> None:
    before = http("GET", pod_path).json()["metadata"]["resourceVersion"]
    response = patch(
        http,
        pod_path,
        [
            {"op": "test", "path": "/spec/containers/0/image", "value": "nope"},
            {"op": "remove", "path": "/spec"},
        ],
        "application/json-patch+json",
    )
    assert response.status_code == 422
    assert http("GET", pod_path).json()["metadata"]["resourceVersion"] == before


def test_a_malformed_json_patch_is_400(http, pod_path: str) -> None:
    assert patch(http, pod_path, {"op": "add"}, "application/json-patch+json").status_code == 400


def test_strategic_merge_merges_containers_env_and_ports_by_key(http, template_path: str) -> None:
    body = in_template(
        {
            "containers": [
                {"name": "main", "image": "busybox:2", "env": [{"name": "B", "value": "2"}]},
                {"name": "side", "ports": [{"containerPort": 81}]},
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        }
    )
    result = template_spec(patch(http, template_path, body, "application/strategic-merge-patch+json").json())
    containers = {c["name"]: c for c in result["containers"]}
    assert containers["main"]["image"] == "busybox:2"
    assert containers["main"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert containers["side"]["image"] == "envoy"
    assert [p["containerPort"] for p in containers["side"]["ports"]] == [80, 81]
    assert [v["name"] for v in result["volumes"]] == ["data", "cache"]


def test_strategic_merge_patch_delete_directive(http, template_path: str) -> None:
    body = in_template(
        {
            "containers": [{"name": "side", "$patch": "delete"}],
            "volumes": [{"name": "data", "$patch": "delete"}],
        }
    )
    result = template_spec(patch(http, template_path, body, "application/strategic-merge-patch+json").json())
    assert [c["name"] for c in result["containers"]] == ["main"]
    assert result.get("volumes", []) == []


def test_strategic_merge_patch_through_the_client(core: CoreV1Api, namespace: str, pod_path: str) -> None:
    patched = core.patch_namespaced_pod(
        "p", namespace, {"spec": {"containers": [{"name": "main", "image": "new"}]}}
    )
    assert [c.name for c in patched.spec.containers] == ["main", "side"]
    assert patched.spec.containers[0].image == "new"


def test_a_patch_carrying_a_stale_resource_version_is_409(http, core: CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "stale"}})
    core.patch_namespaced_config_map("stale", namespace, {"data": {"a": "1"}})
    body = {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"a": "2"}}
    assert (
        patch(
            http, f"/api/v1/namespaces/{namespace}/configmaps/stale", body, "application/merge-patch+json"
        ).status_code
        == 409
    )


def apply(http, path: str, document: dict, manager: str, **params):
    return patch(
        http,
        path,
        yaml.safe_dump(document).encode(),
        "application/apply-patch+yaml",
        fieldManager=manager,
        **params,
    )


def test_server_side_apply_creates_then_updates(http, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/applied"
    document = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"a": "1", "b": "2"},
    }
    created = apply(http, path, document, "tool")
    assert created.status_code == 201
    assert {m["manager"] for m in created.json()["metadata"]["managedFields"]} == {"tool"}
    document["data"] = {"a": "1"}
    updated = apply(http, path, document, "tool")
    assert updated.status_code == 200
    assert updated.json()["data"] == {"a": "1"}


def test_server_side_apply_conflicts_with_another_manager_unless_forced(http, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/shared"
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    assert apply(http, path, {**base, "data": {"owner": "first"}}, "first").status_code == 201
    clash = apply(http, path, {**base, "data": {"owner": "second"}}, "second")
    assert clash.status_code == 409
    assert clash.json()["reason"] == "Conflict"
    assert clash.json()["details"]["causes"][0]["field"] == ".data.owner"
    same_value = apply(http, path, {**base, "data": {"owner": "first", "extra": "x"}}, "second")
    assert same_value.status_code == 200
    forced = apply(http, path, {**base, "data": {"owner": "second"}}, "second", force="true")
    assert forced.status_code == 200
    assert forced.json()["data"]["owner"] == "second"


def test_server_side_apply_needs_a_field_manager(http, namespace: str) -> None:
    document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anon"}}
    response = patch(
        http,
        f"/api/v1/namespaces/{namespace}/configmaps/anon",
        yaml.safe_dump(document).encode(),
        "application/apply-patch+yaml",
    )
    assert response.status_code == 400


def test_server_side_apply_on_a_custom_resource(http, widgets: str, namespace: str) -> None:
    path = f"/apis/kubesim.test/v1/namespaces/{namespace}/widgets/applied"
    document = {
        "apiVersion": "kubesim.test/v1",
        "kind": "Widget",
        "metadata": {"name": "applied"},
        "spec": {"color": "blue"},
    }
    assert apply(http, path, document, "ci").status_code == 201
    document["spec"]["size"] = 8
    assert apply(http, path, document, "ci").json()["spec"] == {"color": "blue", "size": 8}


def test_patch_of_a_missing_object_is_404(core: CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map("none", namespace, {"data": {"a": "b"}})
    assert caught.value.status == 404
