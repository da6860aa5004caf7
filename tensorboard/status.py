"""Pure: a Tensorboard and its Deployment → the status the controller writes (phase, URL, conditions,
lastAccess, observedGeneration).

Phase Ready when the Deployment is available for the current pod template; Failed when the spec cannot
run (named in the message) or the Deployment gave up progressing; Pending otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kube.conditions import FALSE, TRUE, find_condition, set_condition
from kube.models import parse_time

from .conf import TensorboardConf
from .manifests import ANNOTATION_LAST_ACCESS, url

PENDING, READY, FAILED = "Pending", "Ready", "Failed"
READY_CONDITION = "Ready"

Json = Mapping[str, Any]


def last_access(tensorboard: Json) -> str | None:
    """The later of the API's annotation and status.lastAccess (RFC 3339), or None if never opened."""
    annotations = (tensorboard.get("metadata") or {}).get("annotations") or {}
    candidates = [
        annotations.get(ANNOTATION_LAST_ACCESS),
        (tensorboard.get("status") or {}).get("lastAccess"),
    ]
    parsed = [(moment, text) for text in candidates if (moment := parse_time(text)) is not None]
    return max(parsed)[1] if parsed else None


def deployment_state(tensorboard: Json, deployment: Json | None) -> tuple[str, str, str]:
    """(phase, reason, message) read from the Deployment the controller made."""
    if deployment is None:
        return PENDING, "Creating", "The TensorBoard Deployment is being created."
    status = deployment.get("status") or {}
    conditions = status.get("conditions") or []
    progressing = find_condition(conditions, "Progressing") or {}
    if progressing.get("status") == FALSE and progressing.get("reason") == "ProgressDeadlineExceeded":
        return (
            FAILED,
            "ProgressDeadlineExceeded",
            str(progressing.get("message") or "TensorBoard did not start."),
        )
    generation = (deployment.get("metadata") or {}).get("generation")
    current = generation is None or (status.get("observedGeneration") or 0) >= generation
    available = find_condition(conditions, "Available") or {}
    if current and available.get("status") == TRUE and (status.get("availableReplicas") or 0) >= 1:
        return READY, "DeploymentAvailable", "TensorBoard is serving."
    detail = available.get("message") or "waiting for the TensorBoard pod to become ready"
    return PENDING, "DeploymentNotAvailable", f"TensorBoard is starting: {detail}"


def tensorboard_status(
    tensorboard: Json,
    deployment: Json | None,
    conf: TensorboardConf,
    now: datetime,
    *,
    problem: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The desired status. `problem` is (reason, message) when the spec cannot run (phase Failed)."""
    metadata = tensorboard.get("metadata") or {}
    if problem is not None:
        phase, (reason, message) = FAILED, problem
    else:
        phase, reason, message = deployment_state(tensorboard, deployment)
    current = tensorboard.get("status") or {}
    ready = TRUE if phase == READY else FALSE
    status: dict[str, Any] = {
        "phase": phase,
        "url": url(conf, metadata["namespace"], metadata["name"]),
        "message": message,
        "conditions": set_condition(current.get("conditions"), READY_CONDITION, ready, reason, message, now),
        "observedGeneration": metadata.get("generation") or 0,
    }
    accessed = last_access(tensorboard)
    if accessed is not None:
        status["lastAccess"] = accessed
    return status
