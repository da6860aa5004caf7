"""What the API server refuses, or carries over, when a built-in object is updated (validation.go's
Validate*Update functions and the Service registry): pure, over the stored object and the new one.

Writes by the simulator's own controllers (`Store.mutate`: the kubelet binding a pod, say) are not judged
here; they stand for the scheduler and kubelet, which use subresources the simulator does not serve.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from kubesim.errors import Cause

POD_UPDATABLE = (
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_IMMUTABLE = "field is immutable"
_WORKLOAD_SELECTORS = {
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
}


def _shown(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _pod_spec_without_allowed_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The new spec with every change ValidatePodUpdate allows put back to the old value."""
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        old_list, new_list = old.get(key) or [], munged.get(key) or []
        if len(old_list) == len(new_list):
            for before, after in zip(old_list, new_list, strict=True):
                if isinstance(before, dict) and isinstance(after, dict) and "image" in before:
                    after["image"] = before["image"]
    deadline, old_deadline = munged.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if deadline is not None and (old_deadline is None or deadline <= old_deadline):
        munged["activeDeadlineSeconds"] = old_deadline
        if old_deadline is None:
            munged.pop("activeDeadlineSeconds")
    old_tolerations = old.get("tolerations") or []
    if all(t in (munged.get("tolerations") or []) for t in old_tolerations):
        if old_tolerations or "tolerations" in old:
            munged["tolerations"] = old.get("tolerations")
        else:
            munged.pop("tolerations", None)
    grace = old.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    gates = munged.get("schedulingGates") or []
    if all(gate in (old.get("schedulingGates") or []) for gate in gates):  # only removals are allowed
        if "schedulingGates" in old:
            munged["schedulingGates"] = old["schedulingGates"]
        else:
            munged.pop("schedulingGates", None)
    return munged


def _changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(key for key in set(old) | set(new) if old.get(key) != new.get(key))


def _pod_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    old_spec, new_spec = _spec(old), _spec(new)
    causes = []
    added = [
        g for g in new_spec.get("schedulingGates") or [] if g not in (old_spec.get("schedulingGates") or [])
    ]
    for gate in added:
        message = f"Forbidden: only deletion is allowed, but found new scheduling gate '{gate.get('name')}'"
        causes.append(Cause("spec.schedulingGates", message, "FieldValueForbidden"))
    munged = _pod_spec_without_allowed_changes(old_spec, new_spec)
    if munged != old_spec:
        # upstream appends a Go diff of the specs; we name the fields that differ
        changed = ", ".join(f"spec.{key}" for key in _changed_fields(old_spec, munged))
        message = (
            f"Forbidden: pod updates may not change fields other than {POD_UPDATABLE}\n(changed: {changed})"
        )
        causes.append(Cause("spec", message, "FieldValueForbidden"))
    return causes


def _immutable(path: str, old: Any, new: Any) -> list[Cause]:
    if old == new:
        return []
    return [Cause(path, f"Invalid value: {_shown(new)}: {_IMMUTABLE}")]


def _job_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    old_spec, new_spec = _spec(old), _spec(new)
    causes = _immutable("spec.selector", old_spec.get("selector"), new_spec.get("selector"))
    causes += _immutable(
        "spec.completionMode", old_spec.get("completionMode"), new_spec.get("completionMode")
    )
    # a suspended Job that never started may still change its pod template (upstream: its scheduling
    # directives); any other Job's template is fixed
    never_started = old_spec.get("suspend") and not (old.get("status") or {}).get("startTime")
    if not never_started:
        causes += _immutable("spec.template", old_spec.get("template"), new_spec.get("template"))
    return causes


def _data_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """ConfigMaps and Secrets marked `immutable: true`: data and the mark itself stay as they are."""
    if not old.get("immutable"):
        return []
    message = "Forbidden: field is immutable when `immutable` is set"
    causes = [
        Cause(key, message, "FieldValueForbidden")
        for key in ("data", "binaryData")
        if (old.get(key) or {}) != (new.get(key) or {})
    ]
    if new.get("immutable") is not True:
        causes.append(Cause("immutable", message, "FieldValueForbidden"))
    return causes


def update_causes(group: str, kind: str, old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """Why updating `old` to `new` (both defaulted) is invalid, as field errors (empty when it is fine)."""
    if (group, kind) == ("", "Pod"):
        return _pod_causes(old, new)
    if (group, kind) == ("batch", "Job"):
        return _job_causes(old, new)
    if (group, kind) in _WORKLOAD_SELECTORS:
        return _immutable("spec.selector", _spec(old).get("selector"), _spec(new).get("selector"))
    if (group, kind) == ("", "ConfigMap"):
        return _data_causes(old, new)
    if (group, kind) == ("", "Secret"):
        causes = _data_causes(old, new)
        return causes + _immutable("type", old.get("type"), new.get("type"))
    if (group, kind) == ("", "Service"):
        return _service_causes(old, new)
    return []


def _service_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    old_spec, new_spec = _spec(old), _spec(new)
    if "ExternalName" in (old_spec.get("type"), new_spec.get("type")) or not old_spec.get("clusterIP"):
        return []
    after = new_spec.get("clusterIPs") or [new_spec.get("clusterIP")]
    if new_spec.get("clusterIP") != old_spec["clusterIP"] or after != old_spec.get("clusterIPs", after):
        return [Cause("spec.clusterIPs[0]", f"Invalid value: {_shown(after)}: may not change once set")]
    return []


def carry_allocated(group: str, kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A Service update that leaves out what the registry allocated (cluster IPs, node ports) keeps them,
    as the registry's patchAllocatedValues does (so `kubectl replace` of the original manifest works); a
    Pod update that leaves out what the Priority plugin set keeps it, as that plugin does on update before
    validation compares the specs."""
    if (group, kind) == ("", "Pod"):
        pod_spec, old_pod_spec = new.setdefault("spec", {}), _spec(old)
        for field in ("priority", "preemptionPolicy"):
            if pod_spec.get(field) is None and old_pod_spec.get(field) is not None:
                pod_spec[field] = old_pod_spec[field]
        return
    if (group, kind) != ("", "Service"):
        return
    old_spec, new_spec = _spec(old), new.setdefault("spec", {})
    if old_spec.get("type") == "ExternalName" or new_spec.get("type", "ClusterIP") == "ExternalName":
        return
    if not new_spec.get("clusterIP") and old_spec.get("clusterIP"):
        new_spec["clusterIP"] = old_spec["clusterIP"]
        new_spec.setdefault("clusterIPs", old_spec.get("clusterIPs") or [old_spec["clusterIP"]])
    if new_spec.get("clusterIP") and not new_spec.get("clusterIPs"):
        new_spec["clusterIPs"] = [new_spec["clusterIP"]]
    if new_spec.get("type") in ("NodePort", "LoadBalancer"):
        allocated = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in old_spec.get("ports") or []
        }
        for port in new_spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                node_port = allocated.get((port.get("port"), port.get("protocol", "TCP")))
                if node_port:
                    port["nodePort"] = node_port
