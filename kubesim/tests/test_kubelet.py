"""The simulated kubelet, seen through the official client, raw HTTP and the real kubectl.

Every test runs on a frozen clock and moves it with `sim.advance()`; nothing here sleeps for a pod.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubesim.kubelet import SCRIPT_ANNOTATION
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL


@pytest.fixture
def sim(kubesim_factory: Callable[..., Simulator]) -> Simulator:
    return kubesim_factory(frozen_clock=True, kubelet=True)


@pytest.fixture
def core(sim: Simulator) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=str(sim.kubeconfig_path)))


def pod(name: str, *, script: dict[str, Any] | None = None, restart: str = "Never", **labels: str) -> dict:
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if script is not None:
        metadata["annotations"] = {SCRIPT_ANNOTATION: json.dumps(script)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "trainer:1"}]},
    }


def read(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    return core.api_client.sanitize_for_serialization(core.read_namespaced_pod(name, "default"))


def main_status(core: client.CoreV1Api, name: str) -> dict[str, Any]:
    return read(core, name)["status"]["containerStatuses"][0]


def test_a_pod_is_bound_to_a_node_gets_an_ip_and_succeeds_after_a_short_time(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("quick"))
    sim.advance(0)
    pending = read(core, "quick")
    assert pending["spec"]["nodeName"] == "kubesim-node"
    assert pending["status"]["phase"] == "Pending"
    assert pending["status"]["podIP"].startswith("10.244.")
    assert main_status(core, "quick")["state"] == {"waiting": {"reason": "ContainerCreating"}}

    sim.advance(1)
    running = read(core, "quick")
    assert running["status"]["phase"] == "Running"
    assert "startedAt" in main_status(core, "quick")["state"]["running"]
    assert {c["type"]: c["status"] for c in running["status"]["conditions"]}["Ready"] == "True"

    sim.advance(2)
    terminated = main_status(core, "quick")["state"]["terminated"]
    assert read(core, "quick")["status"]["phase"] == "Succeeded"
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert terminated["startedAt"] < terminated["finishedAt"]


def test_the_annotation_scripts_duration_exit_code_and_reason(sim: Simulator, core: client.CoreV1Api) -> None:
    script = {"main": {"duration": 30, "exitCode": 137, "reason": "OOMKilled"}}
    core.create_namespaced_pod("default", pod("oom", script=script))
    sim.advance(30)
    assert read(core, "oom")["status"]["phase"] == "Running"
    sim.advance(1)
    assert read(core, "oom")["status"]["phase"] == "Failed"
    terminated = main_status(core, "oom")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")


def test_on_failure_restarts_in_place_through_a_sequence_of_outcomes(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.kubelet.settings.restart_backoff = 5
    runs = [{"duration": 1, "exitCode": 1}, {"duration": 1, "exitCode": 2}, {"duration": 1, "exitCode": 0}]
    core.create_namespaced_pod("default", pod("flaky", script={"main": runs}, restart="OnFailure"))
    sim.advance(2)
    backing_off = main_status(core, "flaky")
    assert backing_off["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert backing_off["lastState"]["terminated"]["exitCode"] == 1
    assert backing_off["restartCount"] == 0
    assert read(core, "flaky")["status"]["phase"] == "Running"

    sim.advance(5)
    assert main_status(core, "flaky")["restartCount"] == 1
    assert "running" in main_status(core, "flaky")["state"]
    sim.advance(1 + 10 + 1)  # second run fails, backs off 10 s (doubled), third run succeeds
    final = main_status(core, "flaky")
    assert read(core, "flaky")["status"]["phase"] == "Succeeded"
    assert final["restartCount"] == 2
    assert final["lastState"]["terminated"]["exitCode"] == 2


def test_restart_policy_never_fails_the_pod_on_the_first_error(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("once", script={"main": {"exitCode": 3}}))
    sim.advance(10)
    assert read(core, "once")["status"]["phase"] == "Failed"
    assert main_status(core, "once")["restartCount"] == 0


def test_restart_policy_always_keeps_the_pod_running_across_exits(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    sim.kubelet.settings.restart_backoff = 0
    core.create_namespaced_pod("default", pod("server", script={"main": {"duration": 5}}, restart="Always"))
    sim.advance(1 + 5 + 5 + 5)
    assert read(core, "server")["status"]["phase"] == "Running"
    assert main_status(core, "server")["restartCount"] == 3


def test_unscripted_pods_with_restart_policy_always_run_until_deleted(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("daemon", restart="Always"))
    sim.advance(600)
    assert read(core, "daemon")["status"]["phase"] == "Running"


def test_python_rules_script_pods_by_label_and_name_prefix(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.kubelet.script({"*": {"exitCode": 7}}, labels={"role": "worker"})
    sim.kubelet.script({"main": {"exitCode": 9}}, name_prefix="special-")
    core.create_namespaced_pod("default", pod("worker-0", role="worker"))
    core.create_namespaced_pod("default", pod("special-1"))
    core.create_namespaced_pod("default", pod("plain"))
    sim.advance(5)
    assert main_status(core, "worker-0")["state"]["terminated"]["exitCode"] == 7
    assert main_status(core, "special-1")["state"]["terminated"]["exitCode"] == 9
    assert main_status(core, "plain")["state"]["terminated"]["exitCode"] == 0


def test_the_annotation_wins_over_python_rules(sim: Simulator, core: client.CoreV1Api) -> None:
    sim.kubelet.script({"main": {"exitCode": 9}})
    core.create_namespaced_pod("default", pod("annotated", script={"main": {"exitCode": 4}}))
    sim.advance(5)
    assert main_status(core, "annotated")["state"]["terminated"]["exitCode"] == 4


def test_an_invalid_script_annotation_is_refused_with_the_field_named(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("default", pod("bad", script={"main": {"exitCode": "one"}}))
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert body["details"]["causes"][0]["field"] == f"metadata.annotations[{SCRIPT_ANNOTATION}]"
    assert "main.exitCode" in body["details"]["causes"][0]["message"]


def test_init_containers_run_first_and_one_failing_fails_a_never_pod(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    manifest = pod("init", script={"setup": {"duration": 3, "exitCode": 1}})
    manifest["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    core.create_namespaced_pod("default", manifest)
    sim.advance(2)
    status = read(core, "init")["status"]
    assert status["phase"] == "Pending"
    assert "running" in status["initContainerStatuses"][0]["state"]
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    sim.advance(3)
    assert read(core, "init")["status"]["phase"] == "Failed"


def test_native_sidecars_start_before_the_containers_restart_and_stop_with_them(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    """An init container with restartPolicy Always (Kubernetes 1.29+): the next one starts once it runs, it
    restarts whatever its exit, and the pod ends when its containers have, the sidecar stopped then."""
    script = {
        "proxy": [{"duration": 1, "exitCode": 1}, {"duration": None}],
        "setup": {"duration": 1},
        "main": {"duration": 30},
    }
    manifest = pod("sidecars", script=script)
    manifest["spec"]["initContainers"] = [
        {"name": "proxy", "image": "busybox", "restartPolicy": "Always"},
        {"name": "setup", "image": "busybox"},
    ]
    core.create_namespaced_pod("default", manifest)
    sim.advance(1)
    proxy, setup = read(core, "sidecars")["status"]["initContainerStatuses"]
    assert "running" in proxy["state"]
    assert proxy["ready"] is True
    assert "running" in setup["state"], "the next init container starts once the sidecar runs"
    sim.advance(1.5)
    assert "running" in main_status(core, "sidecars")["state"]
    assert read(core, "sidecars")["status"]["phase"] == "Running"
    sim.advance(10)  # the sidecar exited 1: restarted after its back-off, though the pod's policy is Never
    proxy = read(core, "sidecars")["status"]["initContainerStatuses"][0]
    assert proxy["restartCount"] == 1
    assert proxy["lastState"]["terminated"]["exitCode"] == 1
    assert "running" in proxy["state"]
    sim.advance(20)
    status = read(core, "sidecars")["status"]
    assert status["phase"] == "Succeeded", "a sidecar's exit codes do not count: main exited 0"
    assert "terminated" in status["initContainerStatuses"][0]["state"], "stopped with the containers"


def test_a_pod_past_its_active_deadline_fails(sim: Simulator, core: client.CoreV1Api) -> None:
    manifest = pod("bounded", script={"main": {"duration": None}})
    manifest["spec"]["activeDeadlineSeconds"] = 30
    core.create_namespaced_pod("default", manifest)
    sim.advance(29)
    assert read(core, "bounded")["status"]["phase"] == "Running"
    sim.advance(1)
    status = read(core, "bounded")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_waiting_reasons_such_as_image_pull_back_off_are_scriptable(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("pull", script={"main": {"waiting": "ImagePullBackOff"}}))
    sim.advance(60)
    assert read(core, "pull")["status"]["phase"] == "Pending"
    assert main_status(core, "pull")["state"] == {"waiting": {"reason": "ImagePullBackOff"}}


def test_exit_and_evict_from_python(sim: Simulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("held", restart="Always"))
    core.create_namespaced_pod("default", pod("victim", restart="Always"))
    sim.advance(1)
    sim.kubelet.exit("default", "held", "main", exit_code=0)
    sim.kubelet.evict("default", "victim")
    sim.advance(0)
    assert main_status(core, "held")["lastState"]["terminated"]["exitCode"] == 0
    evicted = read(core, "victim")["status"]
    assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")


def test_deleting_a_running_pod_terminates_it_within_its_grace_period(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    script = {"main": {"duration": None, "terminationDelay": 8}}
    manifest = pod("slow-stop", script=script, restart="Always")
    manifest["spec"]["terminationGracePeriodSeconds"] = 5
    core.create_namespaced_pod("default", manifest)
    sim.advance(1)
    core.delete_namespaced_pod("slow-stop", "default")
    sim.advance(0)
    terminating = read(core, "slow-stop")
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 5
    assert terminating["status"]["phase"] == "Running"
    sim.advance(5)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod("slow-stop", "default")
    assert gone.value.status == 404


def test_a_pod_that_stops_promptly_is_gone_right_after_delete(sim: Simulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("prompt", restart="Always"))
    sim.advance(1)
    core.delete_namespaced_pod("prompt", "default")
    sim.advance(0)
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == []


def test_pods_log_serves_output_with_tail_lines_timestamps_and_previous(
    sim: Simulator, core: client.CoreV1Api
) -> None:
    runs = [
        {"duration": 1, "exitCode": 1, "output": ["first run"]},
        {"duration": 4, "output": ["a", "b", "c", "d"]},
    ]
    sim.kubelet.settings.restart_backoff = 0
    core.create_namespaced_pod("default", pod("talker", script={"main": runs}, restart="OnFailure"))
    sim.advance(1 + 1 + 4)
    assert core.read_namespaced_pod_log("talker", "default") == "a\nb\nc\nd\n"
    assert core.read_namespaced_pod_log("talker", "default", tail_lines=2) == "c\nd\n"
    assert core.read_namespaced_pod_log("talker", "default", previous=True) == "first run\n"
    stamped = core.read_namespaced_pod_log("talker", "default", timestamps=True, container="main")
    first_stamp, first_line = stamped.splitlines()[0].split(" ", 1)
    assert first_line == "a"
    assert first_stamp.endswith("Z")
    assert "." in first_stamp


def test_pods_log_errors_are_the_apiservers(sim: Simulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("fresh"))
    sim.advance(0)
    for kwargs, message in (
        ({}, 'container "main" in pod "fresh" is waiting to start: ContainerCreating'),
        ({"container": "nope"}, "container nope is not valid for pod fresh"),
    ):
        with pytest.raises(ApiException) as refused:
            core.read_namespaced_pod_log("fresh", "default", **kwargs)
        assert refused.value.status == 400
        assert json.loads(refused.value.body)["message"] == message
    response = requests.get(f"{sim.url}/api/v1/namespaces/default/pods/absent/log", timeout=5)
    assert response.status_code == 404


def test_follow_streams_lines_as_they_are_written_and_ends_with_the_container(sim: Simulator) -> None:
    script = {"main": {"duration": 3, "output": ["one", "two", "three"]}}
    client.CoreV1Api(
        config.new_client_from_config(config_file=str(sim.kubeconfig_path))
    ).create_namespaced_pod("default", pod("stream", script=script))
    sim.advance(1)
    url = f"{sim.url}/api/v1/namespaces/default/pods/stream/log?follow=true"
    with requests.get(url, stream=True, timeout=10) as response:
        lines = response.iter_lines()
        assert next(lines) == b"one"
        sim.advance(1)
        assert next(lines) == b"two"
        sim.advance(2)
        assert list(lines) == [b"three"]


def test_kubectl_logs_and_logs_follow(sim: Simulator, core: client.CoreV1Api) -> None:
    kubectl = str(KUBECTL)
    env = {"KUBECONFIG": str(sim.kubeconfig_path), "HOME": str(Path(str(sim.kubeconfig_path)).parent)}
    script = {"main": {"duration": 2, "output": ["epoch 1 loss=0.5", "epoch 2 loss=0.25"]}}
    core.create_namespaced_pod("default", pod("train", script=script))
    sim.advance(1)
    follower = subprocess.Popen(
        [kubectl, "logs", "-f", "train"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    advancer = threading.Thread(target=lambda: _advance_while(sim, follower, deadline), daemon=True)
    advancer.start()
    out, err = follower.communicate(timeout=30)
    advancer.join(timeout=5)
    assert follower.returncode == 0, err
    assert out == "epoch 1 loss=0.5\nepoch 2 loss=0.25\n"
    tail = subprocess.run(
        [kubectl, "logs", "train", "--tail=1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert tail.stdout == "epoch 2 loss=0.25\n"


def _advance_while(sim: Simulator, process: subprocess.Popen, deadline: float) -> None:
    """Move the clock a little at a time until kubectl's follow stream has ended."""
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        sim.advance(0.5)


def test_a_deployment_gets_ready_pods_labelled_by_its_template(sim: Simulator) -> None:
    api = config.new_client_from_config(config_file=str(sim.kubeconfig_path))
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "tensorboard"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "tb"}},
                "template": {
                    "metadata": {"labels": {"app": "tb"}},
                    "spec": {"containers": [{"name": "tensorboard", "image": "tensorflow/tensorflow"}]},
                },
            },
        },
    )
    sim.advance(0)
    assert (apps.read_namespaced_deployment_status("tensorboard", "default").status.ready_replicas or 0) == 0
    sim.advance(1)
    status = apps.read_namespaced_deployment_status("tensorboard", "default").status
    assert (status.ready_replicas, status.available_replicas, status.replicas) == (2, 2, 2)
    assert {c.type: c.status for c in status.conditions}["Available"] == "True"
    pods = core.list_namespaced_pod("default", label_selector="app=tb").items
    assert len(pods) == 2
    assert all(p.metadata.name.startswith("tensorboard-") and p.status.phase == "Running" for p in pods)

    apps.patch_namespaced_deployment("tensorboard", "default", {"spec": {"replicas": 1}})
    sim.advance(1)
    assert apps.read_namespaced_deployment_status("tensorboard", "default").status.ready_replicas == 1


def test_a_deleted_deployment_pod_is_replaced(sim: Simulator) -> None:
    api = config.new_client_from_config(config_file=str(sim.kubeconfig_path))
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    template = {
        "metadata": {"labels": {"app": "w"}},
        "spec": {"containers": [{"name": "w", "image": "nginx"}]},
    }
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "w"},
            "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template},
        },
    )
    sim.advance(1)
    (first,) = core.list_namespaced_pod("default", label_selector="app=w").items
    core.delete_namespaced_pod(first.metadata.name, "default")
    sim.advance(1)
    (second,) = core.list_namespaced_pod("default", label_selector="app=w").items
    assert second.metadata.name != first.metadata.name
    assert apps.read_namespaced_deployment_status("w", "default").status.ready_replicas == 1
