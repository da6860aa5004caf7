"""What the apiserver does per built-in kind on create and update: defaults, generated fields, checks."""

from __future__ import annotations

import base64
import itertools
from typing import Any

from kubesim.errors import Cause
from kubesim.resources import ResourceType

_cluster_ips = itertools.count(1)


def _next_cluster_ip() -> str:
    n = next(_cluster_ips)
    return f"10.96.{(n // 250) % 250}.{n % 250 + 1}"


def default_on_create(resource: ResourceType, obj: dict[str, Any]) -> None:
    """Fill the fields the real apiserver fills on create (phases, cluster IPs, replica counts)."""
    group_kind = (resource.group, resource.kind)
    if group_kind == ("", "Namespace"):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif group_kind == ("", "Pod"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", "default")
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif group_kind == ("", "Service"):
        _default_service(obj.setdefault("spec", {}))
        obj["status"] = {"loadBalancer": {}}
    elif group_kind == ("", "Secret"):
        obj.setdefault("type", "Opaque")
    elif group_kind in (("apps", "Deployment"), ("batch", "Job")):
        obj.setdefault("status", {})


def default_on_write(resource: ResourceType, obj: dict[str, Any]) -> None:
    """Defaults applied on every write (create and update)."""
    group_kind = (resource.group, resource.kind)
    if group_kind == ("", "Namespace"):  # the apiserver labels every namespace with its own name
        metadata = obj.setdefault("metadata", {})
        metadata["labels"] = {
            **(metadata.get("labels") or {}),
            "kubernetes.io/metadata.name": metadata.get("name"),
        }
    elif group_kind == ("", "Secret") and "stringData" in obj:
        data = obj.setdefault("data", {})
        for key, value in (obj.pop("stringData") or {}).items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    elif group_kind == ("apps", "Deployment"):
        obj.setdefault("spec", {}).setdefault("replicas", 1)
    elif group_kind == ("batch", "Job"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)


def _default_service(spec: dict[str, Any]) -> None:
    spec.setdefault("type", "ClusterIP")
    if spec["type"] != "ExternalName" and not spec.get("clusterIP"):
        spec["clusterIP"] = _next_cluster_ip()
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))


def builtin_causes(resource: ResourceType, obj: dict[str, Any]) -> list[Cause]:
    """The few built-in validations our controllers would trip over (a real cluster checks far more)."""
    group_kind = (resource.group, resource.kind)
    causes = []
    if group_kind == ("", "Pod"):
        causes += _containers_causes((obj.get("spec") or {}), "spec")
    elif group_kind in (("apps", "Deployment"), ("batch", "Job")):
        template_spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        causes += _containers_causes(template_spec, "spec.template.spec")
        if group_kind == ("apps", "Deployment") and not (obj.get("spec") or {}).get("selector"):
            causes.append(Cause("spec.selector", "Required value", "FieldValueRequired"))
    elif group_kind == ("", "ConfigMap"):
        for key, value in (obj.get("data") or {}).items():
            if not isinstance(value, str):
                causes.append(Cause(f"data[{key}]", "Invalid value: must be a string"))
    return causes


def _containers_causes(pod_spec: dict[str, Any], path: str) -> list[Cause]:
    containers = pod_spec.get("containers")
    if not containers:
        return [Cause(f"{path}.containers", "Required value", "FieldValueRequired")]
    causes = []
    names = set()
    for index, container in enumerate(containers):
        for required in ("name", "image"):
            if not container.get(required):
                causes.append(
                    Cause(f"{path}.containers[{index}].{required}", "Required value", "FieldValueRequired")
                )
        if container.get("name") in names:
            causes.append(
                Cause(
                    f"{path}.containers[{index}].name",
                    f'Duplicate value: "{container["name"]}"',
                    "FieldValueDuplicate",
                )
            )
        names.add(container.get("name"))
    return causes
