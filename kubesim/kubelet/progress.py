"""Pure: a Deployment's status as kube-controller-manager's Deployment controller computes it
(calculateStatus, syncRolloutStatus): the counts from its ReplicaSets, the Available condition (minimum
availability counts `maxUnavailable`), the Progressing condition with its upstream reasons and the progress
deadline, and the ReplicaFailure condition copied from a ReplicaSet.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubesim.clock import format_timestamp, parse_timestamp
from kubesim.kubelet.rollout import Rollout, actual_replicas, available_replicas, total_replicas

AVAILABLE, PROGRESSING, REPLICA_FAILURE = "Available", "Progressing", "ReplicaFailure"
NEW_RS_CREATED, FOUND_NEW_RS = "NewReplicaSetCreated", "FoundNewReplicaSet"
RS_UPDATED, NEW_RS_AVAILABLE, TIMED_OUT = (
    "ReplicaSetUpdated",
    "NewReplicaSetAvailable",
    "ProgressDeadlineExceeded",
)
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"
MIN_AVAILABLE, MIN_UNAVAILABLE = "MinimumReplicasAvailable", "MinimumReplicasUnavailable"


def condition(kind: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    stamp = format_timestamp(now)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def set_condition(status: dict[str, Any], new: dict[str, Any]) -> None:
    """SetDeploymentCondition: unchanged if status and reason are; keeps the transition time while the
    status is; the condition moves to the end of the list."""
    current = get_condition(status, new["type"])
    if current is not None and current["status"] == new["status"] and current.get("reason") == new["reason"]:
        return
    if current is not None and current["status"] == new["status"]:
        new = {**new, "lastTransitionTime": current.get("lastTransitionTime", new["lastTransitionTime"])}
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != new["type"]] + [new]


def remove_condition(status: dict[str, Any], kind: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind]


def calculate_status(
    rollout: Rollout,
    deployment: dict[str, Any],
    all_sets: list[dict[str, Any]],
    new_rs: dict[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    """calculateStatus: the counts from the ReplicaSets and the Available condition."""
    available = available_replicas(all_sets)
    old = deployment.get("status") or {}
    status: dict[str, Any] = {
        "observedGeneration": rollout.generation,
        "replicas": actual_replicas(all_sets),
        "updatedReplicas": actual_replicas([new_rs] if new_rs else []),
        "readyReplicas": sum(int((rs.get("status") or {}).get("readyReplicas") or 0) for rs in all_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total_replicas(all_sets) - available),
        "conditions": [dict(c) for c in old.get("conditions") or []],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= rollout.replicas - rollout.max_unavailable:
        set_condition(
            status, condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.", now)
        )
    else:
        set_condition(
            status,
            condition(
                AVAILABLE, "False", MIN_UNAVAILABLE, "Deployment does not have minimum availability.", now
            ),
        )
    return status


def complete(rollout: Rollout, status: dict[str, Any]) -> bool:
    """DeploymentComplete: every replica updated and available, and the newest spec observed."""
    return (
        status.get("updatedReplicas", 0) == rollout.replicas
        and status.get("replicas", 0) == rollout.replicas
        and status.get("availableReplicas", 0) == rollout.replicas
        and status.get("observedGeneration", 0) >= rollout.generation
    )


def progressing(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """DeploymentProgressing: more updated, ready or available pods, or fewer old ones, than before."""
    return (
        new.get("updatedReplicas", 0) > old.get("updatedReplicas", 0)
        or new.get("replicas", 0) - new.get("updatedReplicas", 0)
        < old.get("replicas", 0) - old.get("updatedReplicas", 0)
        or new.get("readyReplicas", 0) > old.get("readyReplicas", 0)
        or new.get("availableReplicas", 0) > old.get("availableReplicas", 0)
    )


def timed_out(rollout: Rollout, status: dict[str, Any], now: datetime) -> bool:
    """DeploymentTimedOut: no progress recorded for `progressDeadlineSeconds`."""
    current = get_condition(status, PROGRESSING)
    if rollout.progress_deadline is None or current is None or current.get("reason") == NEW_RS_AVAILABLE:
        return False
    if current.get("reason") == TIMED_OUT:
        return True
    since = parse_timestamp(current["lastUpdateTime"]).timestamp()
    return since + rollout.progress_deadline < now.timestamp()


def rollout_status(
    rollout: Rollout,
    deployment: dict[str, Any],
    all_sets: list[dict[str, Any]],
    new_rs: dict[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    """syncRolloutStatus: calculateStatus plus the Progressing condition (complete, progressing, or past
    its deadline) and the ReplicaFailure condition of the ReplicaSets, the new one's first."""
    old = deployment.get("status") or {}
    status = calculate_status(rollout, deployment, all_sets, new_rs, now)
    if rollout.progress_deadline is None:
        remove_condition(status, PROGRESSING)
    current = get_condition(old, PROGRESSING)
    finished = (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE
    )
    named = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs else f'Deployment "{rollout.name}"'
    if rollout.progress_deadline is not None and not finished:
        if complete(rollout, status):
            set_condition(
                status,
                condition(
                    PROGRESSING, "True", NEW_RS_AVAILABLE, f"{named} has successfully progressed.", now
                ),
            )
        elif progressing(old, status):
            moving = condition(PROGRESSING, "True", RS_UPDATED, f"{named} is progressing.", now)
            if current is not None and current["status"] == "True":
                moving["lastTransitionTime"] = current.get("lastTransitionTime", moving["lastTransitionTime"])
            remove_condition(status, PROGRESSING)
            set_condition(status, moving)
        elif timed_out(rollout, status, now):
            set_condition(
                status, condition(PROGRESSING, "False", TIMED_OUT, f"{named} has timed out progressing.", now)
            )
    failures = _replica_failures(new_rs, all_sets)
    if failures:
        set_condition(status, failures[0])
    else:
        remove_condition(status, REPLICA_FAILURE)
    return omit_empty(status)


def _replica_failures(new_rs: dict[str, Any] | None, all_sets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def of(rs: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "type": REPLICA_FAILURE,
                "status": c.get("status"),
                "lastUpdateTime": c.get("lastTransitionTime"),
                "lastTransitionTime": c.get("lastTransitionTime"),
                "reason": c.get("reason"),
                "message": c.get("message"),
            }
            for c in (rs.get("status") or {}).get("conditions") or []
            if c.get("type") == REPLICA_FAILURE
        ]

    return (of(new_rs) if new_rs else []) or [c for rs in all_sets for c in of(rs)]


def omit_empty(status: dict[str, Any]) -> dict[str, Any]:
    """The status as Go serialises it: every DeploymentStatus field is omitempty."""
    return {k: v for k, v in status.items() if v not in (0, None, [])}


def recheck_after(rollout: Rollout, status: dict[str, Any], now: datetime) -> float | None:
    """requeueStuckDeployment: seconds until a rollout without progress passes its deadline (None when
    there is no deadline to watch: no deadline, no Progressing condition, complete, or timed out)."""
    current = get_condition(status, PROGRESSING)
    if rollout.progress_deadline is None or current is None:
        return None
    if complete(rollout, status) or current.get("reason") == TIMED_OUT:
        return None
    since = parse_timestamp(current["lastUpdateTime"]).timestamp()
    return max(0.0, since + rollout.progress_deadline - now.timestamp()) + 1.0
