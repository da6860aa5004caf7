"""What the garbage collector may delete: pure decisions over objects as the API returns them (dicts).

No I/O and no Django: the collector lists objects, asks these functions for a `Verdict` and acts on it,
so every rule here is tested without a cluster. Times come in as arguments (`now`), never from a clock.

Three kinds of garbage:
- pods of finished Argo workflows, older than a retention measured from when they finished;
- pods and services that a finished job of ours asked to clean up (cleanPodPolicy All) but were left;
- children of our jobs whose owner no longer exists (orphans).
Whatever the rule, a pod that is still pending or running is never deleted.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

import fields
from jobs.frameworks import UnknownKind, framework_for
from jobs.spec import run_policy
from jobs.status import is_finished
from kube.times import parse_time

WORKFLOW_LABEL = "workflows.argoproj.io/workflow"
# Argo labels a pod `completed=true` once its node is done (even before the phase says so).
COMPLETED_LABEL = "workflows.argoproj.io/completed"
JOB_LABEL = "argoml.io/job-name"
JOB_API_GROUP = "argoml.io"
#: Kubeflow's group, in which the operator also serves the job kinds (JOBS_KUBEFLOW_V1). Its jobs' children
#: are never judged here: they carry our job-name label but their owner is not an argoml.io job, and
#: Kubeflow's own cleanPodPolicy and TTL clean them, as upstream.
KUBEFLOW_JOB_API_GROUP = "kubeflow.org"

# A Kubernetes namespace is a DNS-1123 label.
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"

FINISHED_PHASES = ("Succeeded", "Failed")
UNFINISHED_PHASES = ("Pending", "Running")
# What a finished pod's Ready conditions turn to when its containers stop.
READINESS_CONDITIONS = ("Ready", "ContainersReady")


class Reason(StrEnum):
    """Why an object is deleted (stored on GCDeletion and counted in metrics) or kept (counted on GCRun)."""

    # deleted
    WORKFLOW_SUCCEEDED = "workflow_succeeded"
    WORKFLOW_FAILED = "workflow_failed"
    JOB_CLEAN_POD_POLICY = "job_clean_pod_policy"
    ORPHAN = "orphan"
    # kept
    NOT_LABELLED = "not_labelled"
    NAMESPACE_EXCLUDED = "namespace_excluded"
    TERMINATING = "terminating"
    NOT_FINISHED = "not_finished"
    FINISH_TIME_UNKNOWN = "finish_time_unknown"
    WITHIN_RETENTION = "within_retention"
    WORKFLOW_POD = "workflow_pod"
    JOB_NOT_FINISHED = "job_not_finished"
    CLEAN_POD_POLICY_KEEPS = "clean_pod_policy_keeps"
    NOT_CONTROLLED = "not_controlled"
    OWNER_UNKNOWN = "owner_unknown"


DELETE_REASONS = (
    Reason.WORKFLOW_SUCCEEDED,
    Reason.WORKFLOW_FAILED,
    Reason.JOB_CLEAN_POD_POLICY,
    Reason.ORPHAN,
)


class Verdict(NamedTuple):
    """Delete or keep, why, and how long ago the object finished (None when that is not known)."""

    delete: bool
    reason: Reason
    age_seconds: float | None = None


def _keep(reason: Reason, age_seconds: float | None = None) -> Verdict:
    return Verdict(False, reason, age_seconds)


# --- settings ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NamespaceOverride:
    """A namespace's own retentions (None: the global one) or its exclusion from collection."""

    succeeded_seconds: int | None = None
    failed_seconds: int | None = None
    excluded: bool = False

    def __post_init__(self) -> None:
        for name in ("succeeded_seconds", "failed_seconds"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{name}: {value!r} must be a whole number of seconds, 0 or more.")


@dataclass(frozen=True)
class Rules:
    """Global retentions, the namespace allow and deny lists (names or shell patterns such as `team-*`)
    and per-namespace overrides. An empty allow list allows every namespace; deny and exclusion win."""

    succeeded_seconds: int
    failed_seconds: int
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    overrides: Mapping[str, NamespaceOverride] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("succeeded_seconds", "failed_seconds"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}: {value!r} must be a whole number of seconds, 0 or more.")
        for name in ("allow", "deny"):
            if any(not isinstance(p, str) or not p.strip() for p in getattr(self, name)):
                raise ValueError(f"{name}: every entry must be a non-empty namespace name or pattern.")

    def includes(self, namespace: str) -> bool:
        """Whether objects in `namespace` may be collected at all."""
        if self.allow and not _matches_any(namespace, self.allow):
            return False
        if _matches_any(namespace, self.deny):
            return False
        override = self.overrides.get(namespace)
        return not (override and override.excluded)

    def retention_seconds(self, namespace: str, *, succeeded: bool) -> int:
        override = self.overrides.get(namespace)
        if override is not None:
            own = override.succeeded_seconds if succeeded else override.failed_seconds
            if own is not None:
                return own
        return self.succeeded_seconds if succeeded else self.failed_seconds


def is_namespace_name(text: str) -> bool:
    return re.fullmatch(NAMESPACE_PATTERN, text) is not None


def _matches_any(namespace: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(namespace, pattern) for pattern in patterns)


# --- reading objects --------------------------------------------------------------------------------


def _list(value: object) -> list[fields.RawDict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def metadata(obj: fields.RawDict) -> fields.RawDict:
    return fields.as_dict(obj.get("metadata"))


def labels(obj: fields.RawDict) -> fields.RawDict:
    return fields.as_dict(metadata(obj).get("labels"))


def namespace_of(obj: fields.RawDict) -> str:
    return str(metadata(obj).get("namespace") or "")


def finish_time(pod: fields.RawDict) -> datetime | None:
    """When the pod's last container stopped; failing that, when it stopped being ready.

    Never creationTimestamp: a pod created a week ago may have finished a minute ago. The containers'
    `terminated.finishedAt` is what the kubelet records; a pod that never ran a container (evicted,
    failed before start) still has its Ready conditions turned False at the moment it finished. A pod
    with neither gives None and is kept. (Argo annotates no finish time on pods; its `completed` label
    only says *whether* the pod finished.)
    """
    status = fields.as_dict(pod.get("status"))
    finished = _latest(
        parse_time(fields.as_dict(fields.as_dict(container.get("state")).get("terminated")).get("finishedAt"))
        for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
        for container in _list(status.get(key))
    )
    return finished if finished is not None else _last_turned(status, READINESS_CONDITIONS, "False")


def _last_turned(status: fields.RawDict, types: tuple[str, ...], to: str) -> datetime | None:
    """When the last of the conditions of `types` turned `to` ("True" or "False"); None if none did."""
    return _latest(
        parse_time(condition.get("lastTransitionTime"))
        for condition in _list(status.get("conditions"))
        if condition.get("type") in types and condition.get("status") == to
    )


def _latest(moments: Iterable[datetime | None]) -> datetime | None:
    known = [moment for moment in moments if moment is not None]
    return max(known) if known else None


def pod_outcome(pod: fields.RawDict) -> str | None:
    """ "Succeeded", "Failed", or None while the pod may still run.

    Pending and Running are never finished, whatever the labels say. Argo's `completed=true` label makes a
    pod in any other phase (Unknown: its node stopped reporting) finished; it counts as failed, the
    outcome with the longer default retention.
    """
    phase = fields.as_dict(pod.get("status")).get("phase")
    if phase in FINISHED_PHASES:
        return str(phase)
    if phase in UNFINISHED_PHASES:
        return None
    return "Failed" if labels(pod).get(COMPLETED_LABEL) == "true" else None


def _age(now: datetime, moment: datetime | None) -> float | None:
    return None if moment is None else (now - moment).total_seconds()


# --- workflow pods ----------------------------------------------------------------------------------


def judge_workflow_pod(pod: fields.RawDict, now: datetime, rules: Rules) -> Verdict:
    """A pod of an Argo workflow goes once it finished longer ago than its namespace's retention."""
    if WORKFLOW_LABEL not in labels(pod):
        return _keep(Reason.NOT_LABELLED)
    namespace = namespace_of(pod)
    if not rules.includes(namespace):
        return _keep(Reason.NAMESPACE_EXCLUDED)
    if metadata(pod).get("deletionTimestamp"):
        return _keep(Reason.TERMINATING)
    outcome = pod_outcome(pod)
    if outcome is None:
        return _keep(Reason.NOT_FINISHED)
    age = _age(now, finish_time(pod))
    if age is None:
        return _keep(Reason.FINISH_TIME_UNKNOWN)
    succeeded = outcome == "Succeeded"
    if age < rules.retention_seconds(namespace, succeeded=succeeded):
        return _keep(Reason.WITHIN_RETENTION, age)
    return Verdict(True, Reason.WORKFLOW_SUCCEEDED if succeeded else Reason.WORKFLOW_FAILED, age)


# --- children of our jobs ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobState:
    """What the collector needs to know of one training job (kept for every job during a run: small)."""

    kind: str
    namespace: str
    name: str
    uid: str
    finished_at: datetime | None
    finished: bool
    clean_pod_policy: str

    @classmethod
    def from_job(cls, job: fields.RawDict) -> JobState:
        """Read a training job of any kind; cleanPodPolicy defaults as the operator defaults it."""
        meta, status = metadata(job), fields.as_dict(job.get("status"))
        kind = str(job.get("kind") or "")
        try:
            clean_pod_policy = run_policy(job, framework_for(kind)).clean_pod_policy
        except UnknownKind:
            clean_pod_policy = "None"
        return cls(
            kind=kind,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            finished_at=job_finish_time(status),
            finished=is_finished(status),
            clean_pod_policy=clean_pod_policy,
        )


def job_finish_time(status: fields.RawDict) -> datetime | None:
    """`completionTime`, or when the Succeeded/Failed condition became True."""
    completion = parse_time(status.get("completionTime"))
    return completion if completion is not None else _last_turned(status, FINISHED_PHASES, "True")


class OwnerRef(NamedTuple):
    kind: str
    name: str
    uid: str


def job_owner_reference(obj: fields.RawDict, job_kinds: Iterable[str]) -> OwnerRef | None:
    """The controller ownerReference naming one of our job kinds, if the object has one."""
    kinds = set(job_kinds)
    for reference in _list(metadata(obj).get("ownerReferences")):
        group = str(reference.get("apiVersion") or "").rpartition("/")[0]
        if reference.get("controller") is True and group == JOB_API_GROUP and reference.get("kind") in kinds:
            name, uid = str(reference.get("name") or ""), str(reference.get("uid") or "")
            return OwnerRef(str(reference["kind"]), name, uid)
    return None


def controlled_by_kubeflow_job(obj: fields.RawDict, job_kinds: Iterable[str]) -> bool:
    """Whether a controller ownerReference names one of our job kinds in Kubeflow's group."""
    kinds = set(job_kinds)
    return any(
        reference.get("controller") is True
        and str(reference.get("apiVersion") or "").rpartition("/")[0] == KUBEFLOW_JOB_API_GROUP
        and reference.get("kind") in kinds
        for reference in _list(metadata(obj).get("ownerReferences"))
    )


class Owner(StrEnum):
    """What the collector learned of a child's owner when it is not a job it could read."""

    GONE = "gone"  # confirmed: no job with the owner's uid (or, for an ownerless child, the label's name)
    UNKNOWN = "unknown"  # the job kind could not be listed or read: never guess
    NOT_CONTROLLED = "not_controlled"  # an ownerless child whose labelled job exists: not the job's to clean


def judge_job_child(
    kind: str, obj: fields.RawDict, owner: JobState | Owner, now: datetime, rules: Rules
) -> Verdict:
    """A Pod or Service labelled with one of our jobs: an orphan goes; so does what a finished job's
    cleanPodPolicy All asked to delete. Running and pending pods stay (stopping them is the operator's)."""
    if JOB_LABEL not in labels(obj):
        return _keep(Reason.NOT_LABELLED)
    if kind == "Pod" and WORKFLOW_LABEL in labels(obj):
        return _keep(Reason.WORKFLOW_POD)
    if not rules.includes(namespace_of(obj)):
        return _keep(Reason.NAMESPACE_EXCLUDED)
    if metadata(obj).get("deletionTimestamp"):
        return _keep(Reason.TERMINATING)
    pod_age = None
    if kind == "Pod":
        if pod_outcome(obj) is None:
            return _keep(Reason.NOT_FINISHED)
        pod_age = _age(now, finish_time(obj))
    if owner is Owner.UNKNOWN:
        return _keep(Reason.OWNER_UNKNOWN, pod_age)
    if owner is Owner.NOT_CONTROLLED:
        return _keep(Reason.NOT_CONTROLLED, pod_age)
    if owner is Owner.GONE:
        return Verdict(True, Reason.ORPHAN, pod_age)
    assert isinstance(owner, JobState)
    age = pod_age if kind == "Pod" else _age(now, owner.finished_at)
    if not owner.finished:
        return _keep(Reason.JOB_NOT_FINISHED, age)
    if owner.clean_pod_policy != "All":
        return _keep(Reason.CLEAN_POD_POLICY_KEEPS, age)
    return Verdict(True, Reason.JOB_CLEAN_POD_POLICY, age)
