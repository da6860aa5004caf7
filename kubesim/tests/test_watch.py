"""Contract: watch from a resourceVersion, bookmarks, timeouts, selector enter/leave, 410 Gone."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException, CoreV1Api

from kubesim.tests.conftest import pod


def collect(
    core: CoreV1Api, namespace: str, *, count: int, timeout: int = 5, **kwargs
) -> list[tuple[str, str]]:
    events = []
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_config_map, namespace, timeout_seconds=timeout, **kwargs
    ):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) >= count:
            watcher.stop()
    return events


def test_watch_from_a_resource_version_replays_later_events(core: CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "one"}})
    core.patch_namespaced_config_map("one", namespace, {"data": {"a": "b"}})
    core.delete_namespaced_config_map("one", namespace)
    events = collect(core, namespace, count=3, resource_version=start)
    assert events == [("ADDED", "one"), ("MODIFIED", "one"), ("DELETED", "one")]


def test_watch_without_a_resource_version_starts_with_the_current_objects(
    core: CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "present"}})
    assert collect(core, namespace, count=1) == [("ADDED", "present")]


def test_watch_sees_events_committed_while_it_is_open(core: CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    timer = threading.Timer(
        0.3, lambda: core.create_namespaced_config_map(namespace, {"metadata": {"name": "later"}})
    )
    timer.start()
    try:
        assert collect(core, namespace, count=1, resource_version=start) == [("ADDED", "later")]
    finally:
        timer.join()


def test_timeout_seconds_ends_the_stream(http, namespace: str) -> None:
    started = time.monotonic()
    response = http(
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        params={"watch": "true", "timeoutSeconds": "1", "resourceVersion": "1"},
    )
    assert response.status_code == 200
    assert 0.9 <= time.monotonic() - started < 4
    assert response.text == ""


def test_bookmarks_carry_the_current_resource_version(http, core: CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "marked"}})
    current = core.list_namespaced_config_map(namespace).metadata.resource_version
    params = {"watch": "1", "timeoutSeconds": "2", "allowWatchBookmarks": "true", "resourceVersion": current}
    lines = http("GET", f"/api/v1/namespaces/{namespace}/configmaps", params=params).text.splitlines()
    bookmarks = [json.loads(line) for line in lines if json.loads(line)["type"] == "BOOKMARK"]
    assert bookmarks
    assert int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) >= int(current)
    assert bookmarks[0]["object"]["kind"] == "ConfigMap"


def test_objects_entering_and_leaving_a_selector_are_added_and_deleted(
    core: CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "mover", "labels": {"team": "a"}}})
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.patch_namespaced_config_map("mover", namespace, {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_config_map("mover", namespace, {"data": {"x": "1"}})
    core.patch_namespaced_config_map("mover", namespace, {"metadata": {"labels": {"team": "a"}}})
    events = collect(core, namespace, count=2, resource_version=start, label_selector="team=b")
    assert events == [("ADDED", "mover"), ("MODIFIED", "mover")]
    events = collect(core, namespace, count=2, resource_version=start, label_selector="team=a")
    assert events == [("DELETED", "mover"), ("ADDED", "mover")]


def test_watch_with_a_field_selector_on_name(core: CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "other"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "wanted"}})
    assert collect(
        core, namespace, count=1, resource_version=start, field_selector="metadata.name=wanted"
    ) == [("ADDED", "wanted")]


def test_a_resource_version_older_than_the_event_log_is_410(kubesim_factory) -> None:
    simulator = kubesim_factory(event_log_size=5)
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(simulator.kubeconfig_path)))
    start = core.list_namespaced_config_map("default").metadata.resource_version
    for index in range(10):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{index}"}})
    with pytest.raises(ApiException) as caught:
        list(
            watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=2
            )
        )
    assert caught.value.status == 410


def test_watch_events_use_the_pod_shape(core: CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_pod(namespace).metadata.resource_version
    core.create_namespaced_pod(namespace, pod("watched"))
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_pod, namespace, resource_version=start, timeout_seconds=3
    ):
        assert event["object"].spec.containers[0].name == "main"
        watcher.stop()
