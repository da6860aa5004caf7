"""A batch/v1 Job controller: runs each Job's pods on the simulated kubelet until it completes or fails.

The pure half (`job_status`, `indexes_to_run`, `format_indexes`) decides; `JobController` lists, creates,
deletes and writes status, shaped like the Deployment controller. It follows the upstream controller for
completions and parallelism, `completionMode: Indexed` (the completion index as annotation, label and the
`JOB_COMPLETION_INDEX` env var), `backoffLimit`, `activeDeadlineSeconds`, and the 1.31+ conditions:
`SuccessCriteriaMet` then `Complete`, `FailureTarget` then `Failed` once the remaining pods are gone.
Pods that finished are kept (not counted through finalizers), so counts are read from them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from kubesim.clock import Timer, parse_timestamp
from kubesim.errors import ApiError
from kubesim.kubelet import ownership
from kubesim.store import DELETED, Store, Subscriptions

log = logging.getLogger(__name__)

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
COMPLETE, FAILED = "Complete", "Failed"
SUCCESS_CRITERIA_MET, FAILURE_TARGET = "SuccessCriteriaMet", "FailureTarget"
_BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")
_DONE = ("CompletionsReached", "Reached expected number of succeeded pods")


@dataclass(frozen=True)
class JobSpec:
    """What the controller reads from a Job, parsed once (defaults are the apiserver's)."""

    completions: int | None
    parallelism: int
    backoff_limit: int
    deadline: int | None
    indexed: bool
    suspended: bool

    @classmethod
    def parse(cls, job: dict[str, Any]) -> JobSpec:
        spec = job.get("spec") or {}
        completions = spec.get("completions")
        deadline = spec.get("activeDeadlineSeconds")
        return cls(
            completions=None if completions is None else int(completions),
            parallelism=int(spec.get("parallelism", 1)),
            backoff_limit=int(spec.get("backoffLimit", 6)),
            deadline=None if deadline is None else int(deadline),
            indexed=spec.get("completionMode") == "Indexed",
            suspended=bool(spec.get("suspend")),
        )


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _index(pod: dict[str, Any]) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX_KEY)
    return int(value) if value is not None and str(value).isdigit() else None


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_active(pod: dict[str, Any]) -> bool:
    return _phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def succeeded_indexes(pods: list[dict[str, Any]]) -> set[int]:
    return {i for p in pods if _phase(p) == "Succeeded" and (i := _index(p)) is not None}


def format_indexes(indexes: set[int]) -> str:
    """`completedIndexes` as the controller writes it: sorted ranges, `1,3-5,7`."""
    ranges: list[list[int]] = []
    for index in sorted(indexes):
        if ranges and index == ranges[-1][1] + 1:
            ranges[-1][1] = index
        else:
            ranges.append([index, index])
    return ",".join(str(first) if first == last else f"{first}-{last}" for first, last in ranges)


def finished_condition(job: dict[str, Any]) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in (COMPLETE, FAILED) and condition.get("status") == "True":
            return str(condition["type"])
    return None


def _target(job: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") in (SUCCESS_CRITERIA_MET, FAILURE_TARGET)
            and condition.get("status") == "True"
        ):
            return condition
    return None


def indexes_to_run(spec: JobSpec, pods: list[dict[str, Any]]) -> list[int | None]:
    """The pods to create now: for Indexed Jobs the lowest indexes neither succeeded nor running; else as
    many as parallelism allows without exceeding the completions still missing."""
    active = [p for p in pods if is_active(p)]
    room = spec.parallelism - len(active)
    if room <= 0 or spec.suspended:
        return []
    if spec.indexed:
        taken = succeeded_indexes(pods) | {i for p in active if (i := _index(p)) is not None}
        free = [i for i in range(spec.completions or 0) if i not in taken]
        return list(free[:room])
    succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
    if spec.completions is None:  # a work queue: done once any pod succeeded
        return [] if succeeded else [None] * room
    return [None] * max(0, min(room, spec.completions - succeeded - len(active)))


def _verdict(spec: JobSpec, pods: list[dict[str, Any]], past_deadline: bool) -> tuple[str, str, str] | None:
    """(target condition, reason, message) once the Job's outcome is decided, else None."""
    succeeded = [p for p in pods if _phase(p) == "Succeeded"]
    failed = sum(1 for p in pods if _phase(p) == "Failed")
    if spec.indexed:
        done = len(succeeded_indexes(pods)) >= (spec.completions or 0)
    elif spec.completions is None:
        done = bool(succeeded) and not any(is_active(p) for p in pods)
    else:
        done = len(succeeded) >= spec.completions
    if done:
        return (SUCCESS_CRITERIA_MET, *_DONE)
    if failed > spec.backoff_limit:
        return (FAILURE_TARGET, *_BACKOFF)
    if past_deadline:
        return (FAILURE_TARGET, *_DEADLINE)
    return None


def job_status(
    job: dict[str, Any], pods: list[dict[str, Any]], now: str, past_deadline: bool
) -> dict[str, Any]:
    """The Job's status from its pods (pure): counts, start and completion times, and the conditions —
    the target condition first, the terminal one when no pod is left running or terminating."""
    spec = JobSpec.parse(job)
    old = job.get("status") or {}
    conditions = [dict(c) for c in old.get("conditions") or []]
    target = _target(job)
    if target is None and (verdict := _verdict(spec, pods, past_deadline)) is not None:
        kind, reason, message = verdict
        target = _condition(kind, reason, message, now)
        conditions.append(target)
    terminating = sum(
        1 for p in pods if p["metadata"].get("deletionTimestamp") and _phase(p) not in ("Succeeded", "Failed")
    )
    active = [p for p in pods if is_active(p)]
    status: dict[str, Any] = {
        "startTime": old.get("startTime")
        or ("" if spec.suspended else now),  # a suspended Job has not started
        "active": len(active),
        "succeeded": sum(1 for p in pods if _phase(p) == "Succeeded"),
        "failed": sum(1 for p in pods if _phase(p) == "Failed"),
        "ready": sum(1 for p in active if _ready(p)),
        "terminating": terminating,
        "uncountedTerminatedPods": {},
    }
    if spec.indexed:
        status["completedIndexes"] = format_indexes(succeeded_indexes(pods))
    if target is not None and not active and not terminating and finished_condition(job) is None:
        final = COMPLETE if target["type"] == SUCCESS_CRITERIA_MET else FAILED
        conditions.append(_condition(final, target["reason"], target["message"], now))
        if final == COMPLETE:
            status["completionTime"] = now
    elif old.get("completionTime"):
        status["completionTime"] = old["completionTime"]
    if conditions:
        status["conditions"] = conditions
    return {k: v for k, v in status.items() if v not in (0, "") or k in ("ready", "terminating")}  # omitempty


def _condition(kind: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


def _controller_uid(pod: dict[str, Any]) -> str | None:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Job":
            return str(ref.get("uid"))
    return None


def pod_for(job: dict[str, Any], index: int | None) -> dict[str, Any]:
    """A pod from the Job's template (pure; named by `generateName`): its labels (the generated job labels
    among them), owned by the Job; an Indexed Job's pod carries its index as annotation, label and
    `JOB_COMPLETION_INDEX`."""
    metadata = job["metadata"]
    template = (job.get("spec") or {}).get("template") or {}
    template_metadata = template.get("metadata") or {}
    labels = dict(template_metadata.get("labels") or {})
    annotations = dict(template_metadata.get("annotations") or {})
    spec = dict(template.get("spec") or {})
    prefix = f"{metadata['name']}-"
    if index is not None:
        prefix = f"{metadata['name']}-{index}-"
        labels[INDEX_KEY] = annotations[INDEX_KEY] = str(index)
        env = {"name": INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}}}
        spec["containers"] = [
            {**c, "env": [*(e for e in c.get("env") or [] if e.get("name") != INDEX_ENV), env]}
            for c in spec.get("containers") or []
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": prefix,  # the apiserver adds 5 characters, as for the real controller's pods
            "namespace": metadata.get("namespace", ""),
            "labels": labels,
            **({"annotations": annotations} if annotations else {}),
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


class JobController:
    """Runs every Job's pods to completion (or failure) and keeps its status."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._subscriptions = Subscriptions()
        self._deadlines: dict[str, Timer] = {}

    def start(self) -> None:
        self._subscriptions = self.store.list_then_watch(("jobs.batch", self._on_job), ("pods", self._on_pod))

    def stop(self) -> None:
        self._subscriptions.cancel()
        for timer in self._deadlines.values():
            timer.cancel()
        self._deadlines.clear()

    def _on_job(self, event_type: str, job: dict[str, Any]) -> None:
        metadata = job["metadata"]
        if event_type == DELETED:
            timer = self._deadlines.pop(metadata["uid"], None)
            if timer is not None:
                timer.cancel()
            return
        self.reconcile(metadata.get("namespace", ""), metadata["name"])

    def _on_pod(self, event_type: str, pod: dict[str, Any]) -> None:
        owner_uid = _controller_uid(pod)
        for ref in pod["metadata"].get("ownerReferences") or []:
            if owner_uid is not None and ref.get("uid") == owner_uid:
                self.reconcile(pod["metadata"].get("namespace", ""), ref["name"])

    def reconcile(self, namespace: str, name: str) -> None:
        job = self.store.get_or_none("jobs.batch", name, namespace)
        if job is None:
            return
        if job["metadata"].get("deletionTimestamp") or finished_condition(job):
            return
        uid = job["metadata"]["uid"]
        spec = JobSpec.parse(job)
        pods = [p for p in self.store.list("pods", namespace)["items"] if _controller_uid(p) == uid]
        now = self.store.clock.timestamp()
        start = (job.get("status") or {}).get("startTime") or now
        past_deadline = self._past_deadline(job, spec, start)
        target = _target(job) or (
            None if (v := _verdict(spec, pods, past_deadline)) is None else {"type": v[0]}
        )
        if target is None:
            for index in indexes_to_run(spec, pods):
                pods.append(self.store.create(pod_for(job, index)))
        elif target["type"] == FAILURE_TARGET:
            for pod in pods:
                if is_active(pod):
                    ownership.delete_pod(self.store, pod, "jobs")
            pods = [self._fresh(p) for p in pods]
            pods = [p for p in pods if p is not None]
        self._write_status(namespace, name, uid, pods, past_deadline)

    def _past_deadline(self, job: dict[str, Any], spec: JobSpec, start: str) -> bool:
        """Whether `activeDeadlineSeconds` ran out; arms a timer that reconciles when it will."""
        if spec.deadline is None:
            return False
        remaining = parse_timestamp(start).timestamp() + spec.deadline - self.store.clock.time()
        if remaining <= 0:
            return True
        uid = job["metadata"]["uid"]
        if uid not in self._deadlines:
            namespace, name = job["metadata"].get("namespace", ""), job["metadata"]["name"]
            self._deadlines[uid] = self.store.clock.call_later(
                remaining, lambda: self.reconcile(namespace, name)
            )
        return False

    def _fresh(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        metadata = pod["metadata"]
        return self.store.get_or_none("pods", metadata["name"], metadata.get("namespace"))

    def _write_status(
        self, namespace: str, name: str, uid: str, pods: list[dict[str, Any]], past_deadline: bool
    ) -> None:
        now = self.store.clock.timestamp()

        def change(job: dict[str, Any]) -> dict[str, Any] | None:
            if job["metadata"]["uid"] != uid or finished_condition(job):
                return None
            status = job_status(job, pods, now, past_deadline)
            if _counts(job.get("status") or {}) == _counts(status):
                return None
            job["status"] = status
            return job

        try:
            self.store.mutate(
                "jobs.batch",
                name,
                change,
                namespace=namespace,
                subresource="status",
                field_manager="job-controller",
            )
        except ApiError as error:
            log.debug("kubesim jobs: status of %s/%s not written: %s", namespace, name, error)


def _counts(status: dict[str, Any]) -> tuple[Any, ...]:
    """What a status rewrite must change to be worth writing (timestamps alone are not)."""
    fields = ("active", "succeeded", "failed", "ready", "terminating", "completedIndexes", "startTime")
    conditions = tuple(c.get("type") for c in status.get("conditions") or [])
    return (*(status.get(f) for f in fields), conditions)
