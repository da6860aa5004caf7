"""Pure: a Tensorboard and its Deployment → the status the controller writes (phase, URL, conditions,
lastAccess, observedGeneration).

Phase Ready when the Deployment is available for the current pod template; Failed when the spec cannot
run (named in the message) or the Deployment gave up progressing; Pending otherwise. Runs the pod's fetcher
could not fetch are read from its `fetch-logs` init container's termination message into `fetchProblems`
and the `ArtifactsFetched` condition: the instance stays Ready with the other runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import fields
from kube.conditions import FALSE, TRUE, find_condition, set_condition
from kube.models import parse_time
from workflows import safeyaml

from .conf import TensorboardConf
from .manifests import ANNOTATION_LAST_ACCESS, FETCH_CONTAINER, url

PENDING, READY, FAILED = "Pending", "Ready", "Failed"
READY_CONDITION = "Ready"
FETCHED_CONDITION = "ArtifactsFetched"
MAX_PROBLEMS_IN_MESSAGE = 3


def last_access(tensorboard: fields.RawDict) -> str | None:
    """The later of the API's annotation and status.lastAccess (RFC 3339), or None if never opened."""
    annotations = (tensorboard.get("metadata") or {}).get("annotations") or {}
    candidates = [
        annotations.get(ANNOTATION_LAST_ACCESS),
        (tensorboard.get("status") or {}).get("lastAccess"),
    ]
    parsed = [(moment, text) for text in candidates if (moment := parse_time(text)) is not None]
    return max(parsed)[1] if parsed else None


def deployment_state(tensorboard: fields.RawDict, deployment: fields.RawDict | None) -> tuple[str, str, str]:
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


def fetch_report(pods: Sequence[fields.RawDict]) -> dict[str, Any] | None:
    """The report the newest pod's fetcher left as its termination message ({runs, failed, more?}), or None
    while no pod has finished fetching (or the pod fetches nothing)."""

    def created(pod: fields.RawDict) -> str:
        return str((pod.get("metadata") or {}).get("creationTimestamp") or "")

    for pod in sorted(pods, key=created, reverse=True):
        for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
            if status.get("name") != FETCH_CONTAINER:
                continue
            terminated = (status.get("state") or {}).get("terminated") or (
                (status.get("lastState") or {}).get("terminated")
            )
            if not terminated:
                return None  # the newest pod is still fetching: keep what the status says
            message = terminated.get("message")
            try:  # the pod is in the tenant's namespace: its message is theirs to write
                report = safeyaml.load_json(message if isinstance(message, str) else "")
            except safeyaml.YamlRefused:
                report = None
            if not isinstance(report, dict) or not isinstance(report.get("failed"), list):
                reason = str(terminated.get("reason") or "")
                return {"runs": 0, "failed": [], "error": f"the fetcher ended ({reason}) without a report"}
            return report
    return None


def _fetch_fields(report: Mapping[str, Any]) -> tuple[list[dict[str, str]], str, str, str]:
    """(fetchProblems, condition status, reason, message) of a fetch report."""
    problems = [
        {
            "run": str(item.get("run") or ""),
            "url": str(item.get("url") or ""),
            "reason": str(item.get("reason") or ""),
        }
        for item in report["failed"]
        if isinstance(item, Mapping)
    ]
    if report.get("error"):
        return problems, FALSE, "FetchFailed", str(report["error"])
    missing = len(problems) + int(report.get("more") or 0)
    if not missing:
        return problems, TRUE, "AllFetched", f"All {report.get('runs')} runs were fetched."
    shown = "; ".join(f"{p['run']}: {p['reason']}" for p in problems[:MAX_PROBLEMS_IN_MESSAGE])
    return (
        problems,
        FALSE,
        "SomeNotFetched",
        f"{missing} of {report.get('runs')} runs could not be fetched: {shown}",
    )


def tensorboard_status(
    tensorboard: fields.RawDict,
    deployment: fields.RawDict | None,
    conf: TensorboardConf,
    now: datetime,
    *,
    problem: tuple[str, str] | None = None,
    pods: Sequence[fields.RawDict] = (),
) -> dict[str, Any]:
    """The desired status. `problem` is (reason, message) when the spec cannot run (phase Failed); `pods` are
    the Deployment's, whose fetcher reports what could not be fetched."""
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
    report = fetch_report(pods)
    if report is not None:
        problems, fetched, fetch_reason, fetch_message = _fetch_fields(report)
        status["fetchProblems"] = problems
        status["conditions"] = set_condition(
            status["conditions"], FETCHED_CONDITION, fetched, fetch_reason, fetch_message, now
        )
    elif "fetchProblems" in current:
        # No pod finished fetching yet (a new one is starting): keep the last report, as the condition is.
        status["fetchProblems"] = current["fetchProblems"]
    return status
