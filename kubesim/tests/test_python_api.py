"""The simulator's own Python API: direct store access, subscribers, admission hooks, persistence, CLI."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests
import yaml
from kubernetes import client, config

from kubesim.errors import ApiError, forbidden
from kubesim.simulator import Simulator
from kubesim.store import AdmissionRequest, Store
from kubesim.testing import running_simulator

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def test_the_fixture_exposes_url_kubeconfig_store_faults_counters_and_clock(kubesim: Simulator) -> None:
    assert kubesim.url.startswith("http://127.0.0.1:")
    assert kubesim.kubeconfig_path is not None
    assert kubesim.kubeconfig_path.exists()
    assert kubesim.store.get("namespaces", "default")["status"]["phase"] == "Active"
    assert kubesim.faults.active() == []
    assert kubesim.counters.total() == 0
    assert kubesim.clock.now().year >= 2024


def test_objects_created_in_python_are_visible_over_http(kubesim: Simulator) -> None:
    kubesim.store.create(POD)
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(kubesim.kubeconfig_path)))
    assert core.read_namespaced_pod("p", "default").spec.containers[0].image == "i"


def test_a_core_event_created_in_python_is_stored_where_both_event_apis_read_it(kubesim: Simulator) -> None:
    """As a real API server stores it: once, as the events.k8s.io/v1 Event (kubesim.eventviews)."""
    kubesim.store.create({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "p.started", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started", "message": "Started container c", "type": "Normal",
        "firstTimestamp": "2026-06-01T08:00:00Z", "count": 1, "source": {"component": "kubelet"},
    })  # fmt: skip
    stored = kubesim.store.get("events.events.k8s.io", "p.started", "default")
    assert (stored["note"], stored["deprecatedFirstTimestamp"]) == (
        "Started container c",
        "2026-06-01T08:00:00Z",
    )
    assert kubesim.store.get("events", "p.started", "default")["metadata"]["uid"] == stored["metadata"]["uid"]
    core = client.CoreV1Api(config.new_client_from_config(str(kubesim.kubeconfig_path)))
    [event] = core.list_namespaced_event("default").items
    assert (event.message, event.count, event.source.component) == ("Started container c", 1, "kubelet")
    assert event.first_timestamp.isoformat() == "2026-06-01T08:00:00+00:00"

    updated = {**kubesim.store.get("events", "p.started", "default"), "deprecatedCount": 2}
    kubesim.store.update(updated)
    assert core.read_namespaced_event("p.started", "default").count == 2


def test_get_returns_copies_that_do_not_change_the_store(kubesim: Simulator) -> None:
    kubesim.store.create(POD)
    copy = kubesim.store.get("pods", "p", "default")
    copy["spec"]["containers"] = []
    assert kubesim.store.get("pod", "p", "default")["spec"]["containers"]


def test_subscribers_see_every_commit_in_order(kubesim: Simulator) -> None:
    seen: list[tuple[str, str]] = []
    kubesim.store.subscribe(lambda kind, obj: seen.append((kind, obj["metadata"]["name"])), resource="pods")
    kubesim.store.create(POD)
    kubesim.store.patch("pods", "p", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
    kubesim.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored", "namespace": "default"}}
    )
    kubesim.store.delete("pods", "p", "default")
    assert kubesim.store.wait_idle()
    assert seen == [("ADDED", "p"), ("MODIFIED", "p"), ("DELETED", "p")]


def test_a_subscriber_may_write_to_the_store(kubesim: Simulator) -> None:
    def schedule(kind: str, pod: dict) -> None:
        if kind == "ADDED":
            kubesim.store.mutate(
                "pods",
                pod["metadata"]["name"],
                lambda p: p["status"].update(phase="Running"),
                namespace="default",
                subresource="status",
            )

    kubesim.store.subscribe(schedule, resource="pods")
    kubesim.store.create(POD)
    assert kubesim.store.wait_idle()
    assert kubesim.store.get("pods", "p", "default")["status"]["phase"] == "Running"


def test_mutating_admission_changes_objects_and_validating_admission_rejects(kubesim: Simulator) -> None:
    def label(request: AdmissionRequest) -> dict | None:
        if request.operation == "CREATE" and request.resource.kind == "Pod":
            request.object["metadata"].setdefault("labels", {})["admitted"] = "yes"
            return request.object
        return None

    def deny_privileged(request: AdmissionRequest) -> None:
        if request.object and request.object["metadata"].get("name") == "forbidden":
            raise forbidden('admission webhook "deny.example" denied the request: no')

    kubesim.store.add_admission(label, mutating=True)
    remove = kubesim.store.add_admission(deny_privileged)
    assert kubesim.store.create(POD)["metadata"]["labels"] == {"admitted": "yes"}
    response = requests.post(
        f"{kubesim.url}/api/v1/namespaces/default/configmaps",
        json={"metadata": {"name": "forbidden"}},
        timeout=5,
    )
    assert response.status_code == 403
    assert "denied the request" in response.json()["message"]
    remove()
    assert (
        requests.post(
            f"{kubesim.url}/api/v1/namespaces/default/configmaps",
            json={"metadata": {"name": "forbidden"}},
            timeout=5,
        ).status_code
        == 201
    )


def test_admission_sees_old_objects_on_update_and_delete(kubesim: Simulator) -> None:
    operations: list[tuple[str, bool, bool]] = []
    kubesim.store.add_admission(
        lambda r: operations.append((r.operation, r.object is not None, r.old_object is not None))
    )
    kubesim.store.create(POD)
    kubesim.store.patch("pods", "p", {"metadata": {"labels": {"x": "y"}}}, namespace="default")
    kubesim.store.delete("pods", "p", "default")
    assert operations == [("CREATE", True, False), ("UPDATE", True, True), ("DELETE", False, True)]


def test_python_watch_iterates_events(kubesim: Simulator) -> None:
    watcher = kubesim.store.watch("configmaps", "default", resource_version=kubesim.store.resource_version)
    kubesim.store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "default"}}
    )
    assert watcher.take(timeout=1)[0][0] == "ADDED"
    watcher.close()
    assert list(watcher) == []


def test_api_errors_are_raised_in_python_too(kubesim: Simulator) -> None:
    with pytest.raises(ApiError) as caught:
        kubesim.store.get("pods", "absent", "default")
    assert caught.value.code == 404


def test_extra_namespaces_exist_from_the_start_besides_the_built_in_ones() -> None:
    with running_simulator(namespaces=("team-a", "team-b")) as simulator:
        names = {ns["metadata"]["name"] for ns in simulator.store.list("namespaces")["items"]}
    assert {"default", "kube-system", "team-a", "team-b"} <= names


def test_the_store_works_without_a_server() -> None:
    store = Store()
    store.ensure_namespace("default")
    store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "alone"}})
    assert [item["metadata"]["name"] for item in store.list("configmaps")["items"]] == ["alone"]


def test_state_dir_keeps_objects_across_restarts(tmp_path: Path) -> None:
    with running_simulator(state_dir=tmp_path) as first:
        first.store.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kept", "namespace": "default"},
                "data": {"a": "1"},
            }
        )
        rv = first.store.resource_version
    with running_simulator(state_dir=tmp_path) as second:
        assert second.store.get("configmaps", "kept", "default")["data"] == {"a": "1"}
        assert int(second.store.resource_version) >= int(rv)
        response = requests.get(
            f"{second.url}/api/v1/namespaces/default/configmaps",
            params={"watch": "1", "resourceVersion": "1", "timeoutSeconds": "1"},
            timeout=5,
        )
        assert '"code":410' in response.text


def test_the_cli_serves_until_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
            "--state-dir",
            str(tmp_path / "state"),
            "--namespace",
            "team-a",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("listening on https://127.0.0.1:")
        url = line.split()[-1]
        assert url in kubeconfig.read_text()
        document = yaml.safe_load(kubeconfig.read_text())
        ca = tmp_path / "ca.crt"
        ca.write_bytes(base64.b64decode(document["clusters"][0]["cluster"]["certificate-authority-data"]))
        assert requests.get(f"{url}/version", verify=str(ca), timeout=5).status_code == 401  # no token
        api = config.new_client_from_config(config_file=str(kubeconfig))  # its CA and admin token
        assert client.VersionApi(api).get_code().major == "1"
        client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "saved"}})
        team = client.CoreV1Api(api).read_namespace("team-a")
        assert team.status.phase == "Active", "--namespace creates it before the kubeconfig is written"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    assert "saved" in (tmp_path / "state" / "state.json").read_text()


def test_concurrent_writers_all_land(kubesim: Simulator) -> None:
    kubesim.store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "counter", "namespace": "default"},
            "data": {"n": "0"},
        }
    )

    def bump() -> None:
        for _ in range(20):
            kubesim.store.mutate(
                "configmaps",
                "counter",
                lambda cm: cm["data"].update(n=str(int(cm["data"]["n"]) + 1)),
                namespace="default",
            )

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert kubesim.store.get("configmaps", "counter", "default")["data"]["n"] == "80"


def test_graceful_pod_deletion_waits_for_a_final_zero_grace_delete(kubesim: Simulator) -> None:
    kubesim.store.graceful_deletion.add("pods")
    bound = {**POD, "spec": {**POD["spec"], "nodeName": "node-1", "terminationGracePeriodSeconds": 10}}
    kubesim.store.create(bound)
    marked = requests.delete(f"{kubesim.url}/api/v1/namespaces/default/pods/p", timeout=5).json()
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 10
    assert kubesim.store.exists("pods", "p", "default")
    kubesim.store.delete("pods", "p", "default", grace_period_seconds=0)
    assert not kubesim.store.exists("pods", "p", "default")


def test_unbound_pods_are_deleted_at_once_even_when_graceful(kubesim: Simulator) -> None:
    kubesim.store.graceful_deletion.add("pods")
    kubesim.store.create(POD)
    kubesim.store.delete("pods", "p", "default")
    assert not kubesim.store.exists("pods", "p", "default")
