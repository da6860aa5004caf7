"""Cluster DNS and kube-proxy's part for process pods: each pod's /etc/hosts and resolv.conf, and the
ClusterIP proxies in the node's network, kept up to date as Services and pods change (records in hosts.py)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesim.errors import ApiError
from kubesim.kubelet.process import hosts
from kubesim.kubelet.sandbox import Node, SandboxError
from kubesim.store import DELETED, Store

#: the `kubernetes` Service's cluster IP, as on a real cluster (the first address of the service range)
MASTER_SERVICE_IP = "10.96.0.1"


@dataclass(frozen=True)
class PodFiles:
    """Where one pod's name files are, and what DNS says of the pod itself."""

    namespace: str
    name: str
    ip: str
    hosts_file: Path


class ClusterNetwork:
    """The name files of every process pod and the node's Service proxies."""

    def __init__(self, store: Store, node: Node) -> None:
        self.store = store
        self.node = node
        self._lock = threading.Lock()
        self._pods: dict[str, PodFiles] = {}  # by pod uid
        self._programmed: dict[str, dict[tuple[str, int], list[tuple[str, int]]]] = {}  # namespace → proxies

    def add_pod(self, uid: str, files: PodFiles, pod: Mapping[str, Any]) -> None:
        with self._lock:
            self._pods[uid] = files
        self._write_hosts(files, self._cluster(), pod)

    def remove_pod(self, uid: str) -> None:
        with self._lock:
            self._pods.pop(uid, None)

    @staticmethod
    def resolv_conf(directory: Path, namespace: str) -> Path:
        """The pod's search path, as the kubelet writes it (no name server answers: /etc/hosts does)."""
        path = directory / "resolv.conf"
        if not path.exists():
            search = f"{namespace}.svc.{hosts.DOMAIN} svc.{hosts.DOMAIN} {hosts.DOMAIN}"
            path.write_text(f"search {search}\nnameserver 127.0.0.1\noptions ndots:5\n")
        return path

    def _cluster(self) -> tuple[list[dict[str, Any]], list[hosts.PodAddress]]:
        """Every Service and every pod's address: what the name files are rendered from."""
        services = self.store.list("services")["items"]
        return services, [address_of(p) for p in self.store.list("pods")["items"]]

    def _write_hosts(
        self,
        files: PodFiles,
        cluster: tuple[list[dict[str, Any]], list[hosts.PodAddress]],
        pod: Mapping[str, Any] | None = None,
    ) -> None:
        if pod is None:
            try:
                pod = self.store.get("pods", files.name, files.namespace)
            except ApiError:
                return
        spec = pod.get("spec") or {}
        own = hosts.PodAddress(
            files.namespace,
            files.name,
            files.ip,
            {},
            str(spec.get("hostname") or ""),
            str(spec.get("subdomain") or ""),
            True,
        )
        services, addresses = cluster
        replace_in_place(files.hosts_file, hosts.render(own, services, addresses).encode())

    def _program_services(self, namespace: str) -> None:
        """kube-proxy's part: each ClusterIP Service of the namespace proxied to its ready pods."""
        pods = self.store.list("pods", namespace)["items"]
        addresses = [address_of(p) for p in pods]
        containers = {
            (namespace, p["metadata"]["name"]): (p.get("spec") or {}).get("containers") or [] for p in pods
        }
        wanted: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for service in self.store.list("services", namespace)["items"]:
            ip = str((service.get("spec") or {}).get("clusterIP") or "")
            if ip == MASTER_SERVICE_IP:
                continue
            for port, backends in hosts.service_backends(service, addresses, containers).items():
                wanted[(ip, port)] = backends
        with self._lock:
            previous = self._programmed.get(namespace, {})
            self._programmed[namespace] = wanted
        for (ip, port), backends in wanted.items():
            if previous.get((ip, port)) != backends:
                self.node.set_service(ip, port, backends)
        for key in set(previous) - set(wanted):
            self.node.set_service(key[0], key[1], [])

    def on_change(self, event_type: str, obj: dict[str, Any]) -> None:
        """A Service or pod changed: the namespace's proxies, then the name files that may show it."""
        namespace = obj["metadata"].get("namespace", "")
        with contextlib.suppress(SandboxError, OSError):
            self._program_services(namespace)
        if obj.get("kind") == "Pod" and event_type != DELETED and not (obj.get("status") or {}).get("podIP"):
            return
        with self._lock:
            affected = [
                f for f in self._pods.values() if f.namespace == namespace or obj.get("kind") == "Service"
            ]
        if not affected:
            return
        cluster = self._cluster()  # listed once for every pod it rewrites
        for files in affected:
            with contextlib.suppress(OSError):
                self._write_hosts(files, cluster)


def replace_in_place(path: Path, content: bytes) -> None:
    """Rewrite a bind-mounted file (a rename would leave the pod the old inode) without the moment a
    truncating open leaves it empty: the pod's resolver reads it on every lookup, and an empty /etc/hosts
    fails a peer's name mid-connect. Unchanged content is not written at all (most pod events change no
    record); new content is written over the old, then the file is cut to its length."""
    try:
        if path.read_bytes() == content:
            return
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, content, 0)
        os.ftruncate(fd, len(content))
    finally:
        os.close(fd)


def address_of(pod: Mapping[str, Any]) -> hosts.PodAddress:
    """A pod as DNS sees it: its IP, labels, host names, and whether it is ready and running."""
    metadata, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    return hosts.PodAddress(
        str(metadata.get("namespace", "")),
        str(metadata["name"]),
        str(status.get("podIP") or ""),
        metadata.get("labels") or {},
        str(spec.get("hostname") or ""),
        str(spec.get("subdomain") or ""),
        ready and status.get("phase") == "Running",
    )
