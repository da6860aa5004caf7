"""Cluster DNS as each pod's /etc/hosts: what CoreDNS would answer, written as a hosts file.

A real pod resolves `svc`, `svc.ns`, `svc.ns.svc` and `svc.ns.svc.cluster.local` through CoreDNS and its
search path; glibc's and c-ares' resolvers read /etc/hosts first and look names up there literally, so the
file lists every form a pod of the namespace may ask for. Records are CoreDNS's: a ClusterIP Service names
its cluster IP; a headless Service names the IPs of its ready endpoints (all of them with
`publishNotReadyAddresses`); a pod with `hostname` and `subdomain` equal to a headless Service's name gets
`hostname.subdomain.ns.svc.cluster.local`. The kubelet rewrites the file in place when Services or pods
change, and glibc reads it on every lookup.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.selectors import match_labels_selector

DOMAIN = "cluster.local"
_HEADER = (
    "# Kubernetes-managed hosts file (kubesim's process kubelet: cluster DNS records included).\n"
    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
)


@dataclass(frozen=True)
class PodAddress:
    """A pod as DNS sees it."""

    namespace: str
    name: str
    ip: str
    labels: Mapping[str, str]
    hostname: str
    subdomain: str
    ready: bool


def _forms(name: str, namespace: str, own_namespace: str) -> list[str]:
    """Every name a pod of `own_namespace` may use for `name` in `namespace` (search path included)."""
    forms = [f"{name}.{namespace}.svc.{DOMAIN}", f"{name}.{namespace}.svc", f"{name}.{namespace}"]
    if namespace == own_namespace:
        forms.append(name)
    return forms


def records(
    services: Iterable[Mapping[str, Any]], pods: Iterable[PodAddress], own_namespace: str
) -> list[tuple[str, str]]:
    """(ip, name) pairs of the cluster's DNS, as a pod of `own_namespace` sees them."""
    pods = list(pods)
    found: list[tuple[str, str]] = []
    for service in services:
        metadata, spec = service.get("metadata") or {}, service.get("spec") or {}
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", ""))
        cluster_ip = spec.get("clusterIP")
        if spec.get("type") == "ExternalName":
            continue
        if cluster_ip and cluster_ip != "None":
            found.extend((cluster_ip, form) for form in _forms(name, namespace, own_namespace))
            continue
        selector = spec.get("selector")
        if not selector:
            continue
        matcher = match_labels_selector({"matchLabels": dict(selector)})
        publish_all = bool(spec.get("publishNotReadyAddresses"))
        for pod in pods:
            if pod.namespace != namespace or not pod.ip or not (pod.ready or publish_all):
                continue
            if not matcher.matches({"metadata": {"labels": dict(pod.labels)}}):
                continue
            found.extend((pod.ip, form) for form in _forms(name, namespace, own_namespace))
            if pod.hostname and pod.subdomain == name:
                found.extend(
                    (pod.ip, f"{pod.hostname}.{form}") for form in _forms(name, namespace, own_namespace)
                )
    return found


def render(own: PodAddress, services: Iterable[Mapping[str, Any]], pods: Iterable[PodAddress]) -> str:
    """The pod's /etc/hosts: localhost, its own name (as the kubelet writes it), then the DNS records."""
    own_names = [own.hostname or own.name]
    if own.hostname and own.subdomain:
        own_names.insert(0, f"{own.hostname}.{own.subdomain}.{own.namespace}.svc.{DOMAIN}")
    lines = [_HEADER, f"{own.ip}\t{' '.join(own_names)}\n"] if own.ip else [_HEADER]
    by_ip: dict[str, list[str]] = defaultdict(list)
    for ip, name in records(services, pods, own.namespace):
        if name not in by_ip[ip]:
            by_ip[ip].append(name)
    lines.extend(f"{ip}\t{' '.join(names)}\n" for ip, names in sorted(by_ip.items()))
    return "".join(lines)


def service_backends(
    service: Mapping[str, Any], pods: Iterable[PodAddress], containers: Mapping[tuple[str, str], Any]
) -> dict[int, list[tuple[str, int]]]:
    """What kube-proxy would program for a ClusterIP Service: service port → (pod IP, target port) of each
    ready pod its selector matches. A named targetPort is looked up in the pod's containers' ports
    (`containers` maps (namespace, pod name) → its container list); a pod without that name is skipped."""
    metadata, spec = service.get("metadata") or {}, service.get("spec") or {}
    selector = spec.get("selector")
    cluster_ip = spec.get("clusterIP")
    if not selector or not cluster_ip or cluster_ip == "None":
        return {}
    matcher = match_labels_selector({"matchLabels": dict(selector)})
    namespace = str(metadata.get("namespace", ""))
    ready = [
        p
        for p in pods
        if p.namespace == namespace
        and p.ip
        and p.ready
        and matcher.matches({"metadata": {"labels": dict(p.labels)}})
    ]
    found: dict[int, list[tuple[str, int]]] = {}
    for port in spec.get("ports") or []:
        if str(port.get("protocol", "TCP")) != "TCP":
            continue
        target = port.get("targetPort", port.get("port"))
        backends = []
        for pod in ready:
            number = _target_port(target, containers.get((pod.namespace, pod.name)) or [])
            if number is not None:
                backends.append((pod.ip, number))
        found[int(port["port"])] = backends
    return found


def _target_port(target: Any, containers: Iterable[Mapping[str, Any]]) -> int | None:
    if isinstance(target, int):
        return target
    if str(target).isdigit():
        return int(str(target))
    for container in containers:
        for declared in container.get("ports") or []:
            if declared.get("name") == target:
                return int(declared["containerPort"])
    return None
