"""What the apiserver does per built-in kind on create and update: defaults, generated fields, checks."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

from kubesim.builtins import defaults, fielderrors, validation
from kubesim.errors import Cause
from kubesim.resources import ResourceType

_cluster_ips = itertools.count(1)
_node_ports = itertools.count(0)


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
        spec.setdefault("serviceAccountName", "default")  # the ServiceAccount admission plugin
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif group_kind == ("", "Service"):
        _allocate_service(obj.setdefault("spec", {}))
        obj["status"] = {"loadBalancer": {}}
    elif group_kind == ("", "Secret"):
        obj.setdefault("type", "Opaque")
    elif group_kind == ("apps", "Deployment"):
        obj.setdefault("status", {})
    elif group_kind == ("batch", "Job"):
        _default_job(obj)
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
    elif group_kind == ("", "Pod"):
        defaults.pod(obj)
    elif group_kind == ("", "Service"):
        defaults.service(obj.setdefault("spec", {}))
    elif group_kind in _TEMPLATE_DEFAULTS:
        _TEMPLATE_DEFAULTS[group_kind](obj.setdefault("spec", {}))
    elif group_kind == ("", "ReplicationController"):
        defaults.replication_controller(obj)
    elif group_kind == ("autoscaling", "HorizontalPodAutoscaler"):
        defaults.horizontal_pod_autoscaler(obj.setdefault("spec", {}))
    elif group_kind == ("batch", "Job"):
        spec = obj.setdefault("spec", {})
        defaults.template(spec)
        if spec.get("completions") is None and spec.get("parallelism") is None:
            spec["completions"] = 1  # a work queue (parallelism only) keeps completions unset
        spec.setdefault("parallelism", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        replacement = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        spec.setdefault("podReplacementPolicy", replacement)


_TEMPLATE_DEFAULTS = {
    ("apps", "Deployment"): defaults.deployment,
    ("apps", "StatefulSet"): defaults.stateful_set,
    ("apps", "DaemonSet"): defaults.daemon_set,
    ("apps", "ReplicaSet"): defaults.replica_set,
    ("batch", "CronJob"): defaults.cron_job,
}

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def _default_job(job: dict[str, Any]) -> None:
    """The Job registry's generated selector: unless `manualSelector` is true, the pod template gets the
    job-name and controller-uid labels (both the `batch.kubernetes.io/` and the legacy keys) and the
    selector matches the new controller-uid label."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    metadata = job["metadata"]
    template_metadata = spec.setdefault("template", {}).setdefault("metadata", {})
    labels = dict(template_metadata.get("labels") or {})
    for key in JOB_UID_LABELS:
        labels[key] = metadata["uid"]
    for key in JOB_NAME_LABELS:
        labels[key] = metadata["name"]
    template_metadata["labels"] = labels
    spec.setdefault("selector", generated_job_selector(job))


def generated_job_selector(job: dict[str, Any]) -> dict[str, Any]:
    return {"matchLabels": {JOB_UID_LABELS[0]: job["metadata"]["uid"]}}


def _allocate_service(spec: dict[str, Any]) -> None:
    """What the Service registry allocates on create: a cluster IP (not for ExternalName or headless `None`)
    and node ports for NodePort and LoadBalancer Services."""
    kind = spec.get("type") or "ClusterIP"
    if kind != "ExternalName" and not spec.get("clusterIP"):
        spec["clusterIP"] = _next_cluster_ip()
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if kind in ("NodePort", "LoadBalancer"):
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = 30000 + next(_node_ports) % 2768


def builtin_causes(
    resource: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[Cause]:
    """The built-in validations the simulator runs (`old` is the stored object on an update): pods and pod
    templates in full (kubesim.builtins.validation), a Deployment's selector, a Job's selector rules, data
    keys of ConfigMaps and Secrets."""
    group_kind = (resource.group, resource.kind)
    causes = validation.workload_causes(resource.group, resource.kind, obj, old)
    if group_kind == ("apps", "Deployment") and not (obj.get("spec") or {}).get("selector"):
        causes.append(Cause("spec.selector", "Required value", "FieldValueRequired"))
    elif group_kind == ("batch", "Job"):
        causes += _job_causes(obj)
    elif group_kind in (("", "ConfigMap"), ("", "Secret")):
        causes += data_key_causes(obj)
    return causes


def data_key_causes(obj: dict[str, Any]) -> list[Cause]:
    """Every `data` and `binaryData` key must be a valid config key, and no key may be in both."""
    causes = []
    binary = obj.get("binaryData") or {}
    for section in ("data", "binaryData"):
        for key in obj.get(section) or {}:
            causes += [
                Cause(f"{section}[{key}]", f"Invalid value: {json.dumps(key)}: {problem}")
                for problem in fielderrors.config_key_problems(key)
            ]
            if section == "data" and key in binary:
                message = f"Invalid value: {json.dumps(key)}: duplicate of key present in binaryData"
                causes.append(Cause(f"data[{key}]", message))
    return causes


def update_causes(resource: ResourceType, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """What may not change once created: a binding's roleRef (rbac validation `ValidateRoleBindingUpdate`;
    to point a binding at another role, delete and recreate it)."""
    if resource.group == "rbac.authorization.k8s.io" and resource.kind in (
        "RoleBinding",
        "ClusterRoleBinding",
    ):
        reference = new.get("roleRef") or {}
        if reference != (old.get("roleRef") or {}):
            shown = ", ".join(
                f"{key}:{json.dumps(reference.get(field, ''))}" for key, field in _ROLE_REF_FIELDS
            )
            return [Cause("roleRef", f"Invalid value: rbac.RoleRef{{{shown}}}: cannot change roleRef")]
    return []


_ROLE_REF_FIELDS = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))


def _job_causes(job: dict[str, Any]) -> list[Cause]:
    """The Job registry's selector rules: a manual selector must be given, a generated one must be the one
    generated (the apiserver's words)."""
    spec = job.get("spec") or {}
    selector = spec.get("selector")
    causes = []
    if spec.get("manualSelector"):
        if not selector:
            causes.append(Cause("spec.selector", "Required value", "FieldValueRequired"))
    elif "uid" in job["metadata"] and selector != generated_job_selector(job):
        message = f"Invalid value: {json.dumps(selector)}: `selector` not auto-generated"
        causes.append(Cause("spec.selector", message))
    return causes
