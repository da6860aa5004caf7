"""The Node objects of the simulated kubelet: Ready, with capacity, allocatable, addresses and nodeInfo, as
`kubectl get nodes` and a scheduler-aware client expect to find them.

Nothing reads their capacity back: the simulated scheduler binds each pod to the next node in turn that is
not cordoned (`spec.unschedulable`).
"""

from __future__ import annotations

import contextlib
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


UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def cordoned(store: Store) -> set[str]:
    """The nodes `kubectl cordon` marked `spec.unschedulable`."""
    return {
        n["metadata"]["name"]
        for n in store.list("nodes")["items"]
        if (n.get("spec") or {}).get("unschedulable")
    }


def tolerates_unschedulable(pod_spec: dict[str, Any]) -> bool:
    """Whether the pod tolerates the unschedulable taint (the NodeUnschedulable plugin's test; DaemonSet
    pods do): a toleration of that key (or of every key, `operator: Exists`) with effect NoSchedule or any."""
    for toleration in pod_spec.get("tolerations") or []:
        key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
        if toleration.get("effect") not in (None, "", "NoSchedule"):
            continue
        if (key == UNSCHEDULABLE_TAINT and operator in ("Exists", "Equal")) or (
            not key and operator == "Exists"
        ):
            return True
    return False


def report_unschedulable(store: Store, pod: dict[str, Any], node_count: int, now: str) -> None:
    """Write PodScheduled False, Unschedulable, on a pod every node refuses (once: an unchanged condition
    is not written again, so the pod's own event does not loop)."""
    condition = unschedulable_condition(node_count, now)

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        if current["metadata"]["uid"] != pod["metadata"]["uid"] or current["spec"].get("nodeName"):
            return None
        status = current.setdefault("status", {})
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        if old is not None and old.get("status") == "False" and old.get("message") == condition["message"]:
            return None
        kept = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [*kept, condition]
        return current

    with contextlib.suppress(ApiError):  # the pod went away meanwhile
        store.mutate_object("pods", pod, change, subresource="status", field_manager="kube-scheduler")


def unschedulable_condition(node_count: int, now: str) -> dict[str, Any]:
    """The PodScheduled condition the scheduler writes when every node is cordoned."""
    return {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
        "reason": "Unschedulable",
        "message": f"0/{node_count} nodes are available: {node_count} node(s) were unschedulable. "
        f"preemption: 0/{node_count} nodes are available: {node_count} Preemption is not helpful for "
        "scheduling.",
    }
