"""Contract: create/get/update/delete with the metadata and status codes of a real apiserver."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiException, CoreV1Api

from kubesim.tests.conftest import pod


def status_of(error: ApiException) -> dict:
    return json.loads(error.body)


def test_create_assigns_uid_resource_version_timestamp_and_generation(
    core: CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "settings"}, "data": {"a": "1"}}
    )
    assert created.metadata.uid
    assert created.metadata.resource_version.isdigit()
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.namespace == namespace
    assert created.metadata.generation in (None, 1)


def test_resource_versions_increase_with_every_write(core: CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"name": "one"}})
    second = core.create_namespaced_config_map(namespace, {"metadata": {"name": "two"}})
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_create_returns_201_and_a_second_create_409_already_exists(http, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}}
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert http("POST", path, json=body).status_code == 201
    again = http("POST", path, json=body)
    assert again.status_code == 409
    assert again.json()["kind"] == "Status"
    assert again.json()["reason"] == "AlreadyExists"


def test_get_of_a_missing_object_is_404_with_a_status_body(core: CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("absent", namespace)
    assert caught.value.status == 404
    assert status_of(caught.value)["reason"] == "NotFound"
    assert status_of(caught.value)["details"]["name"] == "absent"


def test_generate_name_gives_a_unique_suffix(core: CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "run-"}})
    second = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "run-"}})
    assert first.metadata.name.startswith("run-")
    assert len(first.metadata.name) > len("run-")
    assert first.metadata.name != second.metadata.name


def test_namespace_is_taken_from_the_url(http, namespace: str) -> None:
    response = http(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", json={"metadata": {"name": "where"}}
    )
    assert response.json()["metadata"]["namespace"] == namespace


def test_a_body_namespace_that_contradicts_the_url_is_400(http, namespace: str) -> None:
    body = {"metadata": {"name": "elsewhere", "namespace": "other"}}
    response = http("POST", f"/api/v1/namespaces/{namespace}/configmaps", json=body)
    assert response.status_code == 400
    assert response.json()["reason"] == "BadRequest"


def test_create_in_a_missing_namespace_is_404(core: CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_config_map("no-such-namespace", {"metadata": {"name": "x"}})
    assert caught.value.status == 404


def test_put_with_a_stale_resource_version_is_409_conflict(core: CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "cas"}, "data": {"v": "1"}})
    created.data = {"v": "2"}
    updated = core.replace_namespaced_config_map("cas", namespace, created)
    assert updated.data == {"v": "2"}
    created.data = {"v": "3"}  # still carries the first resourceVersion
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("cas", namespace, created)
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("cas", namespace).data == {"v": "2"}


def test_put_without_resource_version_replaces_unconditionally(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "plain"}, "data": {"v": "1"}})
    replaced = core.replace_namespaced_config_map(
        "plain", namespace, {"metadata": {"name": "plain"}, "data": {"v": "9"}}
    )
    assert replaced.data == {"v": "9"}


def test_put_of_a_missing_object_is_404(core: CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_config_map("ghost", namespace, {"metadata": {"name": "ghost"}})
    assert caught.value.status == 404


def test_a_no_op_update_keeps_the_resource_version(core: CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "same"}, "data": {"v": "1"}})
    again = core.patch_namespaced_config_map("same", namespace, {"data": {"v": "1"}})
    assert again.metadata.resource_version == created.metadata.resource_version


def test_generation_is_bumped_by_spec_changes_only(apps, namespace: str) -> None:
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    created = apps.create_namespaced_deployment(namespace, deployment)
    assert created.metadata.generation == 1
    relabelled = apps.patch_namespaced_deployment(
        "web", namespace, {"metadata": {"labels": {"tier": "front"}}}
    )
    assert relabelled.metadata.generation == 1
    status = apps.patch_namespaced_deployment_status("web", namespace, {"status": {"replicas": 1}})
    assert status.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("web", namespace, {"spec": {"replicas": 4}})
    assert scaled.metadata.generation == 2


def test_lists_carry_kind_api_version_and_resource_version(http, core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, pod("listed"))
    listed = http("GET", f"/api/v1/namespaces/{namespace}/pods").json()
    assert listed["kind"] == "PodList"
    assert listed["apiVersion"] == "v1"
    assert listed["metadata"]["resourceVersion"].isdigit()
    assert [item["metadata"]["name"] for item in listed["items"]] == ["listed"]


def test_list_across_namespaces(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "everywhere"}})
    names = {(c.metadata.namespace, c.metadata.name) for c in core.list_config_map_for_all_namespaces().items}
    assert (namespace, "everywhere") in names


def test_dry_run_create_stores_nothing(core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "dry"}}, dry_run="All")
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_config_map("dry", namespace)
    assert caught.value.status == 404


def test_invalid_names_are_422_with_the_field(http, namespace: str) -> None:
    response = http(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", json={"metadata": {"name": "Not_Valid"}}
    )
    assert response.status_code == 422
    assert response.json()["details"]["causes"][0]["field"] == "metadata.name"


def test_pods_without_containers_are_422(http, namespace: str) -> None:
    response = http(
        "POST", f"/api/v1/namespaces/{namespace}/pods", json={"metadata": {"name": "empty"}, "spec": {}}
    )
    assert response.status_code == 422
    assert response.json()["details"]["causes"][0]["field"] == "spec.containers"


def test_builtin_kinds_are_all_served(cluster, namespace: str) -> None:
    from kubernetes import dynamic

    dyn = dynamic.DynamicClient(cluster.api)
    kinds = [
        ("v1", "Service", {"spec": {"ports": [{"port": 80}]}}),
        ("v1", "Secret", {"stringData": {"k": "v"}}),
        ("v1", "ServiceAccount", {}),
        (
            "v1",
            "Event",
            {
                "involvedObject": {"kind": "Pod", "name": "x", "namespace": namespace},
                "reason": "Test",
                "message": "hi",
            },
        ),
        (
            "events.k8s.io/v1",
            "Event",
            {
                "reason": "Test",
                "note": "hi",
                "action": "Testing",
                "reportingController": "kubesim/test",
                "reportingInstance": "one",
                "eventTime": "2026-01-01T00:00:00.000000Z",
            },
        ),
        (
            "batch/v1",
            "Job",
            {
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
                    }
                }
            },
        ),
        ("coordination.k8s.io/v1", "Lease", {"spec": {"holderIdentity": "me"}}),
    ]
    for api_version, kind, body in kinds:
        resource = dyn.resources.get(api_version=api_version, kind=kind)
        # The two Event APIs share their objects (as in a real cluster), so the names differ by group.
        name = f"k-{kind.lower()}-{api_version.replace('/', '-')}"
        created = resource.create(
            body={"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **body},
            namespace=namespace,
        )
        assert created.metadata.uid, kind
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        resource = dyn.resources.get(api_version="admissionregistration.k8s.io/v1", kind=kind)
        name = f"k-{kind.lower()}-{namespace}"
        resource.create(
            body={
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name},
                "webhooks": [],
            }
        )
        resource.delete(name=name)


def test_service_gets_a_cluster_ip_and_secret_string_data_is_encoded(core: CoreV1Api, namespace: str) -> None:
    service = core.create_namespaced_service(
        namespace, {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert service.spec.cluster_ip
    headless = core.create_namespaced_service(
        namespace, {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None"}}
    )
    assert headless.spec.cluster_ip == "None"
    secret = core.create_namespaced_secret(namespace, {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    assert secret.data == {"k": "dg=="}
