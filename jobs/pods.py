"""Reading children as the API returns them (plain dicts): ownership, exit codes, restarts, outcome."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from fields import as_dict, as_int


class Outcome(StrEnum):
    """What a replica's pod says about the replica."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATING = "Terminating"


def name_of(obj: dict[str, Any]) -> str:
    return str(as_dict(obj.get("metadata")).get("name") or "")


def uid_of(obj: dict[str, Any]) -> str:
    return str(as_dict(obj.get("metadata")).get("uid") or "")


def is_terminating(obj: dict[str, Any]) -> bool:
    return bool(as_dict(obj.get("metadata")).get("deletionTimestamp"))


def controlled_by(obj: dict[str, Any], owner_uid: str) -> bool:
    """True when `obj`'s controller ownerReference points at `owner_uid`: only then may we touch it."""
    references = as_dict(obj.get("metadata")).get("ownerReferences")
    return any(
        isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid") == owner_uid
        for ref in references or []
    )


def phase_of(pod: dict[str, Any]) -> str:
    return str(as_dict(pod.get("status")).get("phase") or "Pending")


def is_finished_phase(pod: dict[str, Any]) -> bool:
    return phase_of(pod) in ("Succeeded", "Failed")


def container_status(pod: dict[str, Any], container_name: str) -> dict[str, Any]:
    statuses = as_dict(pod.get("status")).get("containerStatuses")
    for status in statuses if isinstance(statuses, list) else []:
        if isinstance(status, dict) and status.get("name") == container_name:
            return status
    return {}


def exit_code(pod: dict[str, Any], container_name: str) -> int | None:
    """The exit code of the container's current termination, or None while it runs or when unknown."""
    terminated = as_dict(as_dict(container_status(pod, container_name).get("state")).get("terminated"))
    return as_int(terminated.get("exitCode"))


def restart_count(pod: dict[str, Any]) -> int:
    """Every in-place restart the kubelet made in this pod, init containers included."""
    status = as_dict(pod.get("status"))
    total = 0
    for field in ("initContainerStatuses", "containerStatuses"):
        statuses = status.get(field)
        for container in statuses if isinstance(statuses, list) else []:
            total += max(as_int(as_dict(container).get("restartCount")) or 0, 0)
    return total


def outcome(pod: dict[str, Any], container_name: str) -> Outcome:
    """What happened to the replica, judged by the framework container when the pod phase lags behind.

    A sidecar that never exits (a service mesh proxy, say) keeps a pod Running after the training
    container has finished; the replica is finished as soon as that container has exited for good,
    i.e. with 0 under any policy but Always, or with an error under Never.
    """
    if is_terminating(pod):
        return Outcome.TERMINATING
    phase = phase_of(pod)
    if phase == "Succeeded":
        return Outcome.SUCCEEDED
    if phase == "Failed":
        return Outcome.FAILED
    code = exit_code(pod, container_name)
    restart_policy = as_dict(pod.get("spec")).get("restartPolicy", "Always")
    if code == 0 and restart_policy != "Always":
        return Outcome.SUCCEEDED
    if code is not None and code != 0 and restart_policy == "Never":
        return Outcome.FAILED
    return Outcome.RUNNING if phase == "Running" else Outcome.PENDING


def describe_failure(pod: dict[str, Any], container_name: str) -> str:
    """`exited with code 1`, or the pod's own reason (`Evicted`) when the container has no exit code."""
    code = exit_code(pod, container_name)
    if code is not None:
        return f"exited with code {code}"
    reason = as_dict(pod.get("status")).get("reason")
    return f"failed ({reason})" if reason else "failed"
