"""A TrainJob's status from its plan and its pods, as Trainer 2.3 writes it from the JobSet it would have run:
`conditions` (Suspended, Complete, Failed with Trainer's and JobSet's reasons and messages) and `jobsStatus`
per replicated job; which steps may start; and which pods must go.

Pure: no cluster, no clock (the caller passes `now`). We have no Job objects, so each (replicated job, job
index) stands for the Job JobSet would have made: its `count` pods are its completion indexes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import fields
from kube import times
from kube.conditions import FALSE, TRUE, find_condition, is_true, set_condition
from trainer import constants as c
from trainer.operator import plan as planning
from trainer.operator import spec

SUSPENDED = "Suspended"
COMPLETE = "Complete"
FAILED = "Failed"
# Trainer's reasons and messages (pkg/apis/trainer/v1alpha1/trainjob_types.go, pkg/constants).
SUSPENDED_REASON, SUSPENDED_MESSAGE = "Suspended", "TrainJob is suspended"
RESUMED_REASON, RESUMED_MESSAGE = "Resumed", "TrainJob is resumed"
DEADLINE_REASON, DEADLINE_MESSAGE = "DeadlineExceeded", "TrainJob exceeded its active deadline"
# JobSet's, which Trainer copies onto the TrainJob (jobset pkg/constants).
COMPLETED_REASON, COMPLETED_MESSAGE = "AllJobsCompleted", "jobset completed successfully"
FAILED_JOBS_REASON, FAILED_JOBS_MESSAGE = "FailedJobs", "jobset failed due to one or more job failures"
# Ours: a count past its bound (`limits`), found before anything was planned; the message names each field.
LIMIT_EXCEEDED_REASON = "LimitExceeded"


@dataclass(frozen=True)
class JobState:
    """What JobSet counts for one replicated job: how many of its Jobs are in each state."""

    name: str
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0
    replicas: int = 1

    def reached(self, wanted: str) -> bool:
        """Whether a `dependsOn` of this job with status `wanted` (Ready or Complete) is satisfied."""
        if wanted == "Complete":
            return self.succeeded >= self.replicas
        return self.ready + self.succeeded >= self.replicas

    def manifest(self) -> fields.RawDict:
        return {
            "name": self.name,
            "ready": self.ready,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "active": self.active,
            "suspended": self.suspended,
        }


@dataclass(frozen=True)
class Outcome:
    """A reconcile's decision: the status to write, the pods to create and delete, when to look again."""

    status: fields.RawDict
    create: tuple[fields.RawDict, ...] = ()
    delete: tuple[Mapping[str, Any], ...] = ()
    delete_reason: str = ""
    requeue_after: float | None = None


# --- Pods -----------------------------------------------------------------------------------------------


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_finished(pod: Mapping[str, Any]) -> bool:
    return pod_phase(pod) in ("Succeeded", "Failed")


def is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return pod_phase(pod) == "Running" and any(
        isinstance(cond, dict) and cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in conditions
    )


def _job_index(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(c.LABEL_JOB_INDEX) or "0")


def job_states(
    desired: planning.Plan,
    replicas: Mapping[str, int],
    pods: Iterable[Mapping[str, Any]],
    *,
    suspended: bool,
) -> tuple[JobState, ...]:
    """Each step's Jobs by state, JobSet's way: a Job succeeded when all its pods did, failed when one
    failed (our pods are the Job's only attempt) or, under `restartPolicy: OnFailure`, when its running
    pods' containers restarted as often as its `backoffLimit` allows (the Job controller's
    pastBackoffLimitOnFailure: BackoffLimitExceeded), is ready when its ready and succeeded pods cover it,
    and active while a pod of it runs. Pods being deleted count only once they finished. In the order of
    `replicas` (each replicated job's Job count, in the runtime's order, as JobSet reports them)."""
    by_step: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        step = labels.get(c.LABEL_REPLICATED_JOB_NAME)
        if isinstance(step, str):
            by_step.setdefault(step, {}).setdefault(_job_index(pod), []).append(pod)
    states = []
    steps = {step.name: step for step in desired.steps}
    for name, count in replicas.items():
        step = steps[name]
        per_job = len(step.pod_names) // count if count else 0
        jobs = by_step.get(step.name, {})
        state = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0}
        for job_pods in jobs.values():
            phases = [pod_phase(p) for p in job_pods]
            live = [p for p in job_pods if not is_terminating(p)]
            if "Failed" in phases or _past_backoff_limit(step, job_pods):
                state["failed"] += 1
            elif phases.count("Succeeded") >= per_job:
                state["succeeded"] += 1
            else:
                if any(not is_finished(p) for p in live):
                    state["active"] += 1
                if sum(1 for p in live if is_ready(p)) + phases.count("Succeeded") >= per_job:
                    state["ready"] += 1
        unfinished = count - state["succeeded"] - state["failed"]
        states.append(
            JobState(
                name=step.name,
                **state,
                suspended=max(unfinished, 0) if suspended else 0,
                replicas=count,
            )
        )
    return tuple(states)


def restarts(pod: Mapping[str, Any]) -> int:
    """How often a pod's containers and init containers were restarted in place."""
    status = pod.get("status") or {}
    return sum(
        fields.as_int(container.get("restartCount")) or 0
        for key in ("initContainerStatuses", "containerStatuses")
        for container in status.get(key) or []
        if isinstance(container, dict)
    )


def _past_backoff_limit(step: planning.Step, job_pods: Iterable[Mapping[str, Any]]) -> bool:
    """The Job controller's count: restarts of the Job's pending and running pods reach the step's limit."""
    if step.restarts_to_fail is None:
        return False
    counted = sum(restarts(pod) for pod in job_pods if pod_phase(pod) in ("Pending", "Running"))
    return counted >= step.restarts_to_fail


# --- Conditions -----------------------------------------------------------------------------------------


def finished(status: Mapping[str, Any]) -> bool:
    conditions = status.get("conditions") or []
    return is_true(conditions, COMPLETE) or is_true(conditions, FAILED)


def deadline(
    job: spec.TrainJob, conditions: Sequence[Mapping[str, Any]], created_at: datetime | None
) -> datetime | None:
    """When `activeDeadlineSeconds` runs out: counted from creation, or from the last resume (Trainer's
    reconcileDeadline). None without a deadline or while suspended."""
    if job.active_deadline_seconds is None or job.suspend:
        return None
    start = created_at
    suspended = find_condition(conditions, SUSPENDED)
    if suspended is not None and suspended.get("status") == "False":
        start = times.parse_time(suspended.get("lastTransitionTime")) or start
    if start is None:
        return None
    return start + timedelta(seconds=job.active_deadline_seconds)


# --- The decision ---------------------------------------------------------------------------------------


def decide(
    job: spec.TrainJob,
    desired: planning.Plan,
    replicas: Mapping[str, int],
    trainer_steps: Sequence[str],
    pods: Sequence[Mapping[str, Any]],
    previous: Mapping[str, Any],
    *,
    created_at: datetime | None,
    now: datetime,
) -> Outcome:
    """The next status and the pod changes. `replicas` is each step's Job count; `trainer_steps` the steps
    whose success completes the TrainJob (the trainer's ancestor step: MPI's launcher, torch's node).

    A finished TrainJob keeps its conditions and only loses its running pods (JobSet deletes a finished
    JobSet's active Jobs: MPI's sshd nodes once the launcher is done)."""
    conditions: list[fields.RawDict] = [
        dict(cond) for cond in previous.get("conditions") or [] if isinstance(cond, dict)
    ]
    live = [pod for pod in pods if not is_terminating(pod)]
    if job.suspend:
        conditions = set_condition(conditions, SUSPENDED, TRUE, SUSPENDED_REASON, SUSPENDED_MESSAGE, now)
    elif is_true(conditions, SUSPENDED):
        conditions = set_condition(conditions, SUSPENDED, FALSE, RESUMED_REASON, RESUMED_MESSAGE, now)
    states = job_states(desired, replicas, pods, suspended=job.suspend)
    done = finished({"conditions": conditions})
    requeue = None
    if not done:
        by_name = {state.name: state for state in states}
        targets = [by_name[name] for name in trainer_steps if name in by_name] or list(states)
        ends = deadline(job, conditions, created_at)
        if any(state.failed for state in states):
            conditions = set_condition(
                conditions, FAILED, "True", FAILED_JOBS_REASON, FAILED_JOBS_MESSAGE, now
            )
        elif all(state.succeeded >= state.replicas for state in targets):
            conditions = set_condition(conditions, COMPLETE, TRUE, COMPLETED_REASON, COMPLETED_MESSAGE, now)
        elif ends is not None and now > ends:
            conditions = set_condition(conditions, FAILED, TRUE, DEADLINE_REASON, DEADLINE_MESSAGE, now)
        elif ends is not None:
            requeue = (ends - now).total_seconds()
        done = finished({"conditions": conditions})
    if done:
        states = _terminal_counts_kept(states, previous)
    status: fields.RawDict = {
        **previous,
        "conditions": conditions,
        "jobsStatus": [s.manifest() for s in states],
    }
    if not status["conditions"]:
        del status["conditions"]
    if done or job.suspend:
        reason = _stop_reason(conditions, job.suspend)
        stopping = tuple(pod for pod in live if not is_finished(pod))
        return Outcome(status, delete=stopping, delete_reason=reason, requeue_after=requeue)
    existing = {str((pod.get("metadata") or {}).get("name")) for pod in pods}
    create = tuple(
        desired.pod(name)
        for step in startable(desired, states)
        for name in step.pod_names
        if name not in existing
    )
    return Outcome(status, create=create, requeue_after=requeue)


def _terminal_counts_kept(states: Sequence[JobState], previous: Mapping[str, Any]) -> tuple[JobState, ...]:
    """A finished TrainJob's succeeded and failed Job counts never drop as its pods go: JobSet counts Job
    objects, which outlive the pods the Job controller stops (a Job failed past its backoff limit loses
    its running pods, and stays failed)."""
    before = {
        str(entry.get("name")): entry for entry in previous.get("jobsStatus") or [] if isinstance(entry, dict)
    }
    kept = []
    for state in states:
        last = before.get(state.name, {})
        kept.append(
            replace(
                state,
                succeeded=max(state.succeeded, fields.as_int(last.get("succeeded")) or 0),
                failed=max(state.failed, fields.as_int(last.get("failed")) or 0),
            )
        )
    return tuple(kept)


def failed_past_limits(previous: Mapping[str, Any], message: str, now: datetime) -> fields.RawDict:
    """The status of a TrainJob that asks for more than `limits` allows: Failed (LimitExceeded, `message`
    naming each field and bound), nothing else changed. One that already finished keeps its ending."""
    if finished(previous):
        return dict(previous)
    conditions: list[fields.RawDict] = [
        dict(cond) for cond in previous.get("conditions") or [] if isinstance(cond, dict)
    ]
    conditions = set_condition(conditions, FAILED, TRUE, LIMIT_EXCEEDED_REASON, message, now)
    return {**previous, "conditions": conditions}


def startable(desired: planning.Plan, states: Sequence[JobState]) -> list[planning.Step]:
    """The steps whose every `dependsOn` is satisfied, in step order (JobSet starts a replicated job once
    the jobs it depends on are Ready or Complete)."""
    by_name = {state.name: state for state in states}
    return [
        step
        for step in desired.steps
        if all(dep.name in by_name and by_name[dep.name].reached(dep.status) for dep in step.depends_on)
    ]


def _stop_reason(conditions: Sequence[Mapping[str, Any]], suspended: bool) -> str:
    if suspended and not finished({"conditions": conditions}):
        return SUSPENDED_MESSAGE
    failed = find_condition(conditions, FAILED)
    if failed is not None and failed.get("status") == "True":
        return str(failed.get("message") or "")
    return COMPLETED_MESSAGE
