"""The Node objects of the simulated kubelet: Ready, with capacity, allocatable, addresses and nodeInfo, as
`kubectl get nodes` and a scheduler-aware client expect to find them.

Nothing reads their capacity back: the simulated scheduler binds each pod to the next node in turn.
"""

from __future__ import annotations

from typing import Any

from kubesim.errors import ApiError
from kubesim.jsonutil import clone
from kubesim.server.discovery import KUBERNETES_VERSION
from kubesim.store import Store

CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
#: what the kubelet keeps for the system (kube-reserved + eviction threshold), as kubeadm nodes do
ALLOCATABLE = {"cpu": "7800m", "memory": "31Gi", "pods": "110", "ephemeral-storage": "95Gi"}


def node_names(first: str, count: int) -> list[str]:
    """`count` node names: `first`, then `first-2`, `first-3`…"""
    if count < 1:
        raise ValueError(f"node_count: must be at least 1, got {count}")
    return [first, *(f"{first}-{index}" for index in range(2, count + 1))]


def node_manifest(name: str, internal_ip: str, now: str) -> dict[str, Any]:
    """A Ready node, heartbeats at `now`; labels are the well-known ones the kubelet sets."""
    version = f"v{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor']}.0-kubesim"

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kubesim",
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(ALLOCATABLE),
            "conditions": [
                condition(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                condition(
                    "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
                ),
                condition(
                    "PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"
                ),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": name,
                "systemUUID": name,
                "bootID": name,
                "kernelVersion": "6.1.0-kubesim",
                "osImage": "kubesim",
                "containerRuntimeVersion": "kubesim://1.0.0",
                "kubeletVersion": version,
                "kubeProxyVersion": version,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def register(store: Store, addresses: dict[str, str], now: str) -> None:
    """Create each Node (name → InternalIP) unless it exists, then write its Ready status."""
    for name, ip in addresses.items():
        node = node_manifest(name, ip, now)
        try:
            store.create(node)
        except ApiError as error:
            if error.code != 409:
                raise

        # status is a subresource: a create drops it, as the API server does for a kubelet's POST
        def with_status(stored: dict[str, Any], status: dict[str, Any] = node["status"]) -> dict[str, Any]:
            stored["status"] = clone(status)
            return stored

        store.mutate("nodes", name, with_status, subresource="status", field_manager="kubelet")
