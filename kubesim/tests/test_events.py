"""Events are one set of objects served through two APIs, as a real API server serves them: what is
recorded through `events.k8s.io/v1` is read through core `v1` (and so by `kubectl describe` and
`kubectl get events`), field for field, and the other way round. Written to run against a real cluster too.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from kubernetes import client

NOW = "2026-06-01T08:00:05.123456Z"

Http = Callable[..., requests.Response]


def core_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/events" + (f"/{name}" if name else "")


def events_path(namespace: str, name: str = "") -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{namespace}/events" + (f"/{name}" if name else "")


@pytest.fixture
def pod(core: client.CoreV1Api, namespace: str) -> dict[str, Any]:
    body = {"metadata": {"name": "web-1"}, "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}}
    return core.api_client.sanitize_for_serialization(core.create_namespaced_pod(namespace, body))


def recorded(http: Http, namespace: str, pod: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An Event about the pod, recorded as our controllers record them (events.k8s.io/v1)."""
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"web-1.{uuid.uuid4().hex[:10]}", "namespace": namespace},
        "eventTime": NOW,
        "reportingController": "argoml.io/jobs",
        "reportingInstance": "worker-1",
        "action": "Create",
        "reason": "SuccessfulCreatePod",
        "type": "Normal",
        "note": "Created pod web-1",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": namespace,
            "name": "web-1",
            "uid": pod["metadata"]["uid"],
        },
        **fields,
    }
    response = http("POST", events_path(namespace), json=body)
    assert response.status_code == 201, response.text
    return response.json()


def test_an_event_recorded_through_events_k8s_io_is_the_same_object_through_core_v1(http, namespace, pod):
    event = recorded(http, namespace, pod, series={"count": 4, "lastObservedTime": NOW})
    core = http("GET", core_path(namespace, event["metadata"]["name"])).json()
    assert core["apiVersion"] == "v1"
    assert core["kind"] == "Event"
    assert core["metadata"]["uid"] == event["metadata"]["uid"]
    assert core["metadata"]["resourceVersion"] == event["metadata"]["resourceVersion"]
    assert core["involvedObject"] == event["regarding"]
    assert core["message"] == "Created pod web-1"
    assert core["reportingComponent"] == "argoml.io/jobs"
    assert core["reportingInstance"] == "worker-1"
    assert core["series"] == {"count": 4, "lastObservedTime": NOW}
    assert (core["reason"], core["type"], core["action"], core["eventTime"]) == (
        "SuccessfulCreatePod", "Normal", "Create", NOW,
    )  # fmt: skip
    for events_only in ("regarding", "note", "reportingController"):
        assert events_only not in core


def test_the_field_selectors_kubectl_describe_sends_find_the_events_of_one_object(http, namespace, pod):
    event = recorded(http, namespace, pod)
    uid = pod["metadata"]["uid"]
    selector = f"involvedObject.name=web-1,involvedObject.namespace={namespace},involvedObject.uid={uid}"
    found = http("GET", core_path(namespace), params={"fieldSelector": selector, "limit": 500}).json()
    assert [item["metadata"]["name"] for item in found["items"]] == [event["metadata"]["name"]]
    assert found["kind"] == "EventList"

    def matching(selector: str) -> list[dict[str, Any]]:
        return http("GET", core_path(namespace), params={"fieldSelector": selector}).json()["items"]

    assert matching("involvedObject.uid=someone-else") == []
    assert len(matching("involvedObject.kind=Pod,type=Normal")) == 1
    assert len(matching("reason=SuccessfulCreatePod")) == 1
    # `message` is no field label of Events upstream (pkg/apis/core/v1/conversion.go)
    assert http("GET", core_path(namespace), params={"fieldSelector": "message=x"}).status_code == 400
    # The events.k8s.io names of the same fields still work through events.k8s.io.
    newer = http("GET", events_path(namespace), params={"fieldSelector": f"regarding.uid={uid}"}).json()
    assert [item["metadata"]["name"] for item in newer["items"]] == [event["metadata"]["name"]]


def test_an_event_written_through_core_v1_is_read_updated_and_deleted_through_both(http, namespace, pod):
    regarding = {"kind": "Pod", "namespace": namespace, "name": "web-1", "uid": pod["metadata"]["uid"]}
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web-1.legacy"},
        "involvedObject": regarding,
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-06-01T08:00:00Z",
        "lastTimestamp": "2026-06-01T08:00:05Z",
        "count": 2,
    }
    created = http("POST", core_path(namespace), json=body)
    assert created.status_code == 201, created.text
    assert created.json()["message"] == body["message"]

    newer = http("GET", events_path(namespace, "web-1.legacy")).json()
    assert newer["apiVersion"] == "events.k8s.io/v1"
    assert newer["regarding"] == body["involvedObject"]
    assert newer["note"] == body["message"]
    assert newer["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert newer["deprecatedFirstTimestamp"] == "2026-06-01T08:00:00Z"
    assert newer["deprecatedLastTimestamp"] == "2026-06-01T08:00:05Z"
    assert newer["deprecatedCount"] == 2

    patched = http(
        "PATCH",
        core_path(namespace, "web-1.legacy"),
        data=json.dumps({"count": 3, "lastTimestamp": "2026-06-01T08:00:09Z"}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["count"] == 3
    assert http("GET", events_path(namespace, "web-1.legacy")).json()["deprecatedCount"] == 3

    assert http("DELETE", core_path(namespace, "web-1.legacy")).status_code == 200
    assert http("GET", events_path(namespace, "web-1.legacy")).status_code == 404


def test_a_watch_through_core_v1_sees_events_recorded_through_events_k8s_io(http, namespace, pod):
    since = http("GET", core_path(namespace)).json()["metadata"]["resourceVersion"]
    event = recorded(http, namespace, pod)
    with http(
        "GET",
        core_path(namespace),
        params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "5"},
        stream=True,
    ) as response:
        first = json.loads(next(response.iter_lines()))
    assert first["type"] == "ADDED"
    assert first["object"]["metadata"]["name"] == event["metadata"]["name"]
    assert first["object"]["message"] == "Created pod web-1"


def test_kubectl_describe_and_get_events_show_what_a_controller_recorded(http, namespace, pod, kubectl):
    recorded(http, namespace, pod, reason="SuccessfulCreatePod", note="Created pod web-1")
    recorded(http, namespace, pod, reason="ExitedWithCode", type="Warning", note="web exited with code 137")
    described = kubectl("describe", "pod", "web-1").stdout
    events = described.split("Events:", 1)[1]
    assert "<none>" not in events
    assert "SuccessfulCreatePod" in events
    assert "ExitedWithCode" in events
    assert "web exited with code 137" in events
    assert "argoml.io/jobs" in events  # the From column: reportingComponent
    listed = kubectl("get", "events").stdout
    assert "SuccessfulCreatePod" in listed
    assert "pod/web-1" in listed
