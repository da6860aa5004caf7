"""Fault injection and request counters, set up through the simulator's Python API, observed over HTTP."""

from __future__ import annotations

import time

import pytest
import requests
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from kubesim.simulator import Simulator


@pytest.fixture
def core(kubesim: Simulator) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubesim.kubeconfig_path)))


def test_an_injected_429_carries_retry_after_and_fires_once(kubesim: Simulator) -> None:
    kubesim.faults.fail(429, verb="list", resource="configmaps", retry_after=3)
    url = f"{kubesim.url}/api/v1/namespaces/default/configmaps"
    throttled = requests.get(url, timeout=5)
    assert throttled.status_code == 429
    assert throttled.headers["Retry-After"] == "3"
    assert throttled.json()["reason"] == "TooManyRequests"
    assert requests.get(url, timeout=5).status_code == 200


def test_the_official_client_waits_out_retry_after(kubesim: Simulator, core: client.CoreV1Api) -> None:
    kubesim.faults.fail(429, verb="list", resource="configmaps", retry_after=1)
    started = time.monotonic()
    assert core.list_namespaced_config_map("default").items == []
    assert time.monotonic() - started >= 1
    assert kubesim.counters.count(verb="list", resource="configmaps") == 2


@pytest.mark.parametrize(
    ("status", "reason"), [(409, "Conflict"), (500, "InternalError"), (503, "ServiceUnavailable")]
)
def test_injected_errors_answer_with_a_status_body(kubesim: Simulator, status: int, reason: str) -> None:
    kubesim.faults.fail(status, verb="create", times=2)
    for _ in range(2):
        response = requests.post(
            f"{kubesim.url}/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}}, timeout=5
        )
        assert response.status_code == status
        assert response.json()["reason"] == reason
    assert (
        requests.post(
            f"{kubesim.url}/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "x"}}, timeout=5
        ).status_code
        == 201
    )


def test_faults_match_only_their_resource(kubesim: Simulator, core: client.CoreV1Api) -> None:
    kubesim.faults.fail(500, resource="secrets", times=None)
    assert core.list_namespaced_config_map("default").items == []
    with pytest.raises(ApiException):
        core.list_namespaced_secret("default")
    kubesim.faults.clear()
    assert core.list_namespaced_secret("default").items == []


def test_injected_latency_delays_requests(kubesim: Simulator, core: client.CoreV1Api) -> None:
    kubesim.faults.latency(0.3, verb="get", times=1)
    core.create_namespaced_config_map("default", {"metadata": {"name": "slow"}})
    started = time.monotonic()
    core.read_namespaced_config_map("slow", "default")
    assert time.monotonic() - started >= 0.3


def test_a_dropped_watch_stream_ends_without_a_clean_close(
    kubesim: Simulator, core: client.CoreV1Api
) -> None:
    for index in range(3):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"w{index}"}})
    kubesim.faults.drop_watch(after_events=1, resource="configmaps")
    url = f"{kubesim.url}/api/v1/namespaces/default/configmaps"
    response = requests.get(url, params={"watch": "1", "timeoutSeconds": "5"}, stream=True, timeout=10)
    lines = response.iter_lines()
    assert b'"ADDED"' in next(lines)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        next(lines)


def test_an_expired_watch_answers_410_once(kubesim: Simulator, core: client.CoreV1Api) -> None:
    kubesim.faults.expire_watch(resource="configmaps")
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    with pytest.raises(ApiException) as caught:
        list(
            watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
            )
        )
    assert caught.value.status == 410
    assert (
        list(
            watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
            )
        )
        == []
    )


def test_counters_count_requests_per_verb_and_route(kubesim: Simulator, core: client.CoreV1Api) -> None:
    kubesim.counters.reset()
    core.create_namespaced_config_map("default", {"metadata": {"name": "counted"}})
    core.read_namespaced_config_map("counted", "default")
    core.read_namespaced_config_map("counted", "default")
    core.list_namespaced_config_map("default")
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("missing", "default")
    assert kubesim.counters.count(verb="get", resource="configmaps") == 3
    assert kubesim.counters.count(verb="get", resource="configmaps", code=404) == 1
    assert kubesim.counters.count(verb="create") == 1
    assert kubesim.counters.by_route()["GET /api/v1/namespaces/{namespace}/configmaps/{name}"] == 3
    assert kubesim.counters.by_verb()["list configmaps"] == 1


def test_status_subresource_requests_are_counted_separately(
    kubesim: Simulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running"}})
    assert kubesim.counters.count(verb="patch", resource="pods/status") == 1
