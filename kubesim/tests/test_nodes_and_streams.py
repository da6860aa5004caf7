"""Nodes the simulated kubelet registers, pods bound to them, and the streaming pod subresources
(exec, attach, port-forward) that the simulator refuses by name, seen through the real kubectl."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from kubesim.kubelet.nodes import node_names
from kubesim.simulator import Simulator
from kubesim.testing import KUBECTL


def run_kubectl(sim: Simulator, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(sim.kubeconfig_path)}
    return subprocess.run(
        [str(KUBECTL), *args], capture_output=True, text=True, env=env, check=False, timeout=60
    )


def pod(name: str, node: str | None = None) -> dict:
    spec: dict = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_the_kubelet_registers_ready_nodes_with_capacity_and_node_info(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """A node's status has "capacity", "allocatable", "conditions" (Ready among them) and "nodeInfo"
    (Node v1 reference); `kubectl get nodes` prints STATUS Ready."""
    sim = kubesim_factory(frozen_clock=True, kubelet=True, nodes=2)
    nodes = sim.store.list("nodes")["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["kubesim-node", "kubesim-node-2"]
    for node in nodes:
        status = node["status"]
        assert status["capacity"]["cpu"] == "8"
        assert status["allocatable"]["pods"] == "110"
        ready = next(c for c in status["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
        assert status["nodeInfo"]["kubeletVersion"].startswith("v1.")
    assert [a["address"] for n in nodes for a in n["status"]["addresses"] if a["type"] == "InternalIP"] == [
        "172.18.0.2",
        "172.18.0.3",
    ]
    table = run_kubectl(sim, "get", "nodes").stdout.splitlines()
    assert [line.split()[:2] for line in table[1:]] == [
        ["kubesim-node", "Ready"],
        ["kubesim-node-2", "Ready"],
    ]


def test_pods_are_bound_to_the_nodes_in_turn_and_a_named_node_is_kept(
    kubesim_factory: Callable[..., Simulator],
) -> None:
    """ "spec.nodeName … If it is non-empty, the scheduler simply schedules this pod onto that node" (Pod v1
    reference); an unbound pod gets one of the registered nodes, and its hostIP is that node's."""
    sim = kubesim_factory(frozen_clock=True, kubelet=True, nodes=2)
    for name in ("a", "b", "c"):
        sim.store.create(pod(name), "default")
    sim.store.create(pod("pinned", node="kubesim-node-2"), "default")
    sim.advance(2)
    bound = {p["metadata"]["name"]: p for p in sim.store.list("pods", "default")["items"]}
    assert [bound[n]["spec"]["nodeName"] for n in ("a", "b", "c")] == [
        "kubesim-node",
        "kubesim-node-2",
        "kubesim-node",
    ]
    assert bound["pinned"]["spec"]["nodeName"] == "kubesim-node-2"
    assert bound["pinned"]["status"]["hostIP"] == "172.18.0.3"


def test_a_restarted_kubelet_keeps_the_nodes_it_finds(kubesim_factory: Callable[..., Simulator]) -> None:
    sim = kubesim_factory(frozen_clock=True, kubelet=True)
    sim.kubelet.stop()
    sim.kubelet.start()
    assert [n["metadata"]["name"] for n in sim.store.list("nodes")["items"]] == ["kubesim-node"]


@pytest.mark.parametrize(("count", "names"), [(1, ["n"]), (3, ["n", "n-2", "n-3"])])
def test_node_names_count_up_from_the_first(count: int, names: list[str]) -> None:
    assert node_names("n", count) == names


def test_node_names_refuse_a_cluster_without_nodes() -> None:
    with pytest.raises(ValueError, match="node_count: must be at least 1, got 0"):
        node_names("n", 0)


@pytest.mark.parametrize("subresource", ["exec", "attach", "portforward"])
def test_streaming_subresources_answer_400_naming_the_simulator(kubesim: Simulator, subresource: str) -> None:
    """A real API server upgrades these to a stream to the kubelet; the simulator has none and says so in
    a Status (400 BadRequest), not a bare 404. A pod that does not exist is still 404 NotFound."""
    kubesim.store.create(pod("shell"), "default")
    url = f"{kubesim.url}/api/v1/namespaces/default/pods/shell/{subresource}"
    answer = requests.post(url, timeout=10)
    assert answer.status_code == 400
    status = answer.json()
    assert status["kind"] == "Status"
    assert status["reason"] == "BadRequest"
    assert f"pods/{subresource} is not supported by the simulator (kubesim)" in status["message"]
    missing = requests.post(url.replace("/shell/", "/absent/"), timeout=10)
    assert missing.status_code == 404


def test_discovery_lists_the_pod_subresources_with_the_api_servers_verbs(kubesim: Simulator) -> None:
    """pods/exec, pods/attach and pods/portforward take "create" and "get" (WebSocket clients use GET);
    pods/log takes "get"."""
    resources = {r["name"]: r for r in requests.get(f"{kubesim.url}/api/v1", timeout=10).json()["resources"]}
    for stream in ("exec", "attach", "portforward"):
        assert resources[f"pods/{stream}"]["verbs"] == ["create", "get"]
    assert resources["pods/log"]["verbs"] == ["get"]


def test_kubectl_exec_prints_the_simulators_message(kubesim: Simulator, tmp_path: Path) -> None:
    kubesim.store.create(pod("shell"), "default")
    result = run_kubectl(kubesim, "exec", "shell", "--", "true")
    assert result.returncode != 0
    assert "pods/exec is not supported by the simulator (kubesim)" in result.stderr


def test_the_openapi_offers_only_the_operations_each_pod_subresource_takes(kubesim: Simulator) -> None:
    """The OpenAPI follows discovery's verbs: exec is GET and POST (no PUT or PATCH), status GET/PUT/PATCH."""
    paths = requests.get(f"{kubesim.url}/openapi/v3/api/v1", timeout=10).json()["paths"]
    pods = "/api/v1/namespaces/{namespace}/pods/{name}"
    assert set(paths[f"{pods}/exec"]) == {"get", "post"}
    assert set(paths[f"{pods}/log"]) == {"get"}
    assert set(paths[f"{pods}/status"]) == {"get", "put", "patch"}
