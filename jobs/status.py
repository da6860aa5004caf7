"""Pure status aggregation: a job and its observed pods → the job's new status.

Conditions follow Kubernetes conventions (one entry per type, True or False, with reason, message,
lastUpdateTime and lastTransitionTime kept while nothing changes), in Kubeflow's order: a condition that
changes moves to the end, so a job reads Created, Running, then Succeeded (Running now False) as
Kubeflow's operator writes them, and the condition of the job's state is last: `.status.conditions[-1:]
.type` is what the printer column shows. Succeeded and Failed are terminal: once either is True the
status never changes again, except `observedGeneration`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fields import as_dict
from jobs.frameworks import Framework
from jobs.manifests import replica_type_selector, slot_name
from jobs.pods import Outcome, describe_failure, name_of, outcome
from jobs.policies import will_restart
from jobs.spec import JobSpec, Slot, framework_container_name
from kube.conditions import FALSE, TRUE, set_condition
from kube.times import format_time, parse_time

CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED, SUSPENDED = (
    "Created",
    "Running",
    "Restarting",
    "Succeeded",
    "Failed",
    "Suspended",
)
CONDITION_TYPES = (CREATED, RUNNING, RESTARTING, SUSPENDED, SUCCEEDED, FAILED)
#: Conditions that are True only while the job is in that state.
PASSING_STATES = (RUNNING, RESTARTING, SUSPENDED)


@dataclass(frozen=True)
class Failure:
    """A failure decided outside the pods (deadline, backoff, validation); it wins over everything."""

    reason: str
    message: str


@dataclass(frozen=True)
class State:
    """The job's state this time round, with the reason and message its condition will carry."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class ReplicaView:
    """One desired replica and what its pod (if any) says."""

    slot: Slot
    pod: dict[str, Any] | None
    outcome: Outcome | None
    restart_policy: str


def is_finished(status: dict[str, Any] | None) -> bool:
    return any(_is_true(c) for c in _conditions(status) if c.get("type") in (SUCCEEDED, FAILED))


def current_state(status: dict[str, Any] | None) -> str | None:
    """The type of the condition that most recently became True (what `kubectl get` shows)."""
    true = [c for c in _conditions(status) if _is_true(c)]
    return str(true[-1]["type"]) if true else None


def aggregate(
    job: JobSpec[Any],
    previous: dict[str, Any],
    pods: Iterable[dict[str, Any]],
    now: datetime,
    *,
    framework: Framework[Any],
    failure: Failure | None = None,
) -> dict[str, Any]:
    """The status `job` should have given its `previous` status and its pods (the job's own, already
    filtered by owner).

    Deciding order: a `failure` passed in; success (the chief/master succeeded, else worker 0, or
    every worker under successPolicy AllWorkers) — success wins over failures seen at the same
    time, since training is done; a failed replica that will not be retried; suspension; a replica
    being recreated (Restarting); a running replica (Running); else just Created.
    """
    status = copy.deepcopy(previous)
    if job.generation is not None:
        status["observedGeneration"] = job.generation
    if is_finished(previous):
        return status

    views = replica_views(job, framework, pods)
    state = decide_state(job, framework, views, failure)
    timestamp = format_time(now)

    conditions = set_condition(
        _conditions(previous), CREATED, TRUE, *_created(job), timestamp, updated_last=True
    )
    # States that end turn False before the new one turns True, so the new one is appended last. As in
    # Kubeflow, an ended state keeps its reason and message (Running stays "TFJob ns/x is running."); a
    # resumed job says so.
    for passing in PASSING_STATES:
        ended = next((c for c in conditions if c.get("type") == passing), None)
        if state.type != passing and ended is not None:
            reason, message = (
                _resumed(job)
                if passing == SUSPENDED
                else (str(ended.get("reason") or ""), str(ended.get("message") or ""))
            )
            conditions = set_condition(
                conditions, passing, FALSE, reason, message, timestamp, updated_last=True
            )
    if state.type != CREATED:
        conditions = set_condition(
            conditions, state.type, TRUE, state.reason, state.message, timestamp, updated_last=True
        )
    if state.type in (SUCCEEDED, FAILED):
        status.setdefault("completionTime", timestamp)
    status["conditions"] = order_conditions(conditions, state.type)
    status["replicaStatuses"] = {
        replica_type: {**counts, "selector": replica_type_selector(job, replica_type)}
        for replica_type, counts in replica_statuses(
            views, suspended=state.type == SUSPENDED, succeeded=state.type == SUCCEEDED
        ).items()
    }
    if state.type == SUSPENDED:
        status.pop("startTime", None)
    elif parse_time(status.get("startTime")) is None:
        status["startTime"] = timestamp
    return status


def replica_views(
    job: JobSpec[Any], framework: Framework[Any], pods: Iterable[dict[str, Any]]
) -> list[ReplicaView]:
    """Each desired replica with its pod."""
    by_name = {name_of(p): p for p in pods}
    views = []
    for slot in job.slots:
        pod = by_name.get(slot_name(job, slot))
        result = outcome(pod, framework_container_name(pod, framework)) if pod is not None else None
        views.append(ReplicaView(slot, pod, result, job.replicas[slot.replica_type].restart_policy))
    return views


def decide_state(
    job: JobSpec[Any], framework: Framework[Any], views: list[ReplicaView], failure: Failure | None
) -> State:
    kind, ref = job.kind, f"{job.namespace}/{job.name}"
    if failure is not None:
        return State(FAILED, failure.reason, failure.message)
    if _succeeded(job, framework, views):
        return State(SUCCEEDED, f"{kind}Succeeded", f"{kind} {ref} successfully completed.")
    failed = [v for v in views if v.outcome == Outcome.FAILED]
    lost = [v for v in failed if not _retried(v, framework)]
    if lost:
        return State(
            FAILED, f"{kind}Failed", f"{kind} {ref} has failed because {_describe(lost, framework)}."
        )
    if job.run_policy.suspend:
        return State(SUSPENDED, f"{kind}Suspended", f"{kind} {job.name} is suspended.")
    restarting = [v for v in views if v.outcome in (Outcome.FAILED, Outcome.TERMINATING)]
    if restarting:
        return State(
            RESTARTING,
            f"{kind}Restarting",
            f"{kind} {ref} is restarting: {_describe(restarting, framework)}.",
        )
    if any(v.outcome == Outcome.RUNNING for v in views):
        return State(RUNNING, f"{kind}Running", f"{kind} {ref} is running.")
    return State(CREATED, *_created(job))


def replica_statuses(
    views: list[ReplicaView], *, suspended: bool = False, succeeded: bool = False
) -> dict[str, dict[str, int]]:
    """Per replica type: active (pending or running), succeeded and failed pods.

    Once the job succeeded, a replica still active counts as succeeded, as Kubeflow's operator counts it
    ("if any replicas are still active, set their status to succeeded"): the chief decided, and a worker
    exiting a moment later, or a parameter server the clean-up ends, did not fail the job."""
    statuses: dict[str, dict[str, int]] = {}
    for view in views:
        counts = statuses.setdefault(view.slot.replica_type, {"active": 0, "succeeded": 0, "failed": 0})
        if view.outcome in (Outcome.PENDING, Outcome.RUNNING) and not suspended:
            counts["succeeded" if succeeded else "active"] += 1
        elif view.outcome == Outcome.SUCCEEDED:
            counts["succeeded"] += 1
        elif view.outcome == Outcome.FAILED:
            counts["failed"] += 1
    return statuses


def order_conditions(conditions: list[dict[str, Any]], state: str) -> list[dict[str, Any]]:
    """The conditions in the order they last changed (Kubeflow's), except that the condition of the job's
    `state` goes last when it is True: a job back to Created (its pods pending again) must not show the
    Running it just left as its state."""
    current = [c for c in conditions if c.get("type") == state and _is_true(c)]
    return [c for c in conditions if c not in current] + current


def transitions(previous: dict[str, Any] | None, status: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Conditions that became True, or Suspended that became False: ("True"|"False", condition)."""
    before = {c.get("type"): c.get("status") for c in _conditions(previous)}
    changes = []
    for condition in _conditions(status):
        type_, now_status = condition.get("type"), condition.get("status")
        if before.get(type_) == now_status:
            continue
        if now_status == "True" or (type_ == SUSPENDED and before.get(type_) == "True"):
            changes.append((str(now_status), condition))
    return changes


def _succeeded(job: JobSpec[Any], framework: Framework[Any], views: list[ReplicaView]) -> bool:
    chief = job.chief_type
    if chief is not None:
        deciders = [v for v in views if v.slot.replica_type == chief]
        return bool(deciders) and all(v.outcome == Outcome.SUCCEEDED for v in deciders)
    workers = {
        v.slot.replica_index: v.outcome == Outcome.SUCCEEDED
        for v in views
        if v.slot.replica_type == framework.worker_type
    }
    return framework.workers_succeeded(job, workers)


def _retried(view: ReplicaView, framework: Framework[Any]) -> bool:
    return view.pod is not None and will_restart(
        view.restart_policy, view.pod, framework_container_name(view.pod, framework)
    )


def _describe(views: list[ReplicaView], framework: Framework[Any]) -> str:
    parts = []
    for view in views:
        assert view.pod is not None  # only replicas with a pod fail or terminate
        if view.outcome == Outcome.TERMINATING:
            parts.append(f"{name_of(view.pod)} is being replaced")
        else:
            failure = describe_failure(view.pod, framework_container_name(view.pod, framework))
            parts.append(f"{name_of(view.pod)} {failure}")
    return ", ".join(parts)


def _created(job: JobSpec[Any]) -> tuple[str, str]:
    """Kubeflow's wording: the created, suspended and resumed messages name the job alone (the running,
    restarting, succeeded and failed ones name it with its namespace)."""
    return f"{job.kind}Created", f"{job.kind} {job.name} is created."


def _resumed(job: JobSpec[Any]) -> tuple[str, str]:
    return f"{job.kind}Resumed", f"{job.kind} {job.name} is resumed."


def _conditions(status: dict[str, Any] | None) -> list[dict[str, Any]]:
    conditions = as_dict(status).get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def _is_true(condition: dict[str, Any]) -> bool:
    return condition.get("status") == "True"
