"""The reconcile decision as plain data: job + observed children + now → what to create, delete, record.

`plan()` is pure and deterministic; the reconcile loop applies the Plan it returns (see the contract
in `Plan`'s docstring). Running it again on the same observation gives the same Plan, and applying a
Plan twice is harmless: names are deterministic, deletions carry the uid they are meant for, and the
restart ledger in the status counts each recreation once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from fields import FieldError, as_dict
from jobs import bounds, gang
from jobs import spec as jobspec
from jobs.frameworks import Framework
from jobs.manifests import build_pod, build_service, extra_children, slot_name
from jobs.pods import Outcome, controlled_by, describe_failure, is_terminating, name_of, outcome, uid_of
from jobs.policies import (
    RestartLedger,
    backoff_exceeded,
    pods_to_clean,
    seconds_until,
    unfinished_pods,
    will_restart,
)
from jobs.spec import JobSpec, RunPolicy, framework_container_name
from jobs.status import FAILED, RESTARTING, Failure, aggregate, is_finished, transitions
from jobs.validation import validate
from kube.controller.children import Deletion, Event
from kube.resources import ResourceType
from kube.times import parse_time

FAILED_VALIDATION = "FailedValidation"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
DEADLINE_EXCEEDED = "DeadlineExceeded"
#: Kubeflow's reason when a pod template names another scheduler while gang scheduling is on.
SET_POD_TEMPLATE_SCHEDULER_NAME = "SetPodTemplateSchedulerName"


@dataclass(frozen=True)
class PodGroupChange:
    """What to do with the job's PodGroup (gang scheduling, jobs/gang.py) before any child is created:
    `create` or `replace` it with `manifest`, or `delete` it (`manifest` is the one observed: its uid is
    the precondition)."""

    verb: str  # create | replace | delete
    resource: ResourceType
    manifest: dict[str, Any]


@dataclass(frozen=True)
class Plan:
    """What the reconcile loop must do, in this order:

    1. If `status` differs from the job's status, replace `.status` (status subresource) and stop on
       any error: the status carries the restart ledger, which must be saved before pods go away.
    2. Delete each of `delete` (uid precondition; 404 and 409 are success), then apply `pod_group`
       (if it cannot be written, create nothing this run), then replace each of `update` (its
       resourceVersion is the precondition), then create each of `create` in order (ConfigMaps and
       Secrets, then Services, then Pods; 409 is success). Record
       `kube.controller.children.deletion_event(d)` / `creation_event(m)` on the job for each that succeeded.
    3. Record `events` on the job.
    4. If `delete_job`, delete the job (background propagation removes its children).
    5. If `requeue_after` is set, reconcile again after that many seconds (deadline or TTL).
    """

    status: dict[str, Any]
    create: tuple[dict[str, Any], ...] = ()
    update: tuple[dict[str, Any], ...] = ()
    delete: tuple[Deletion, ...] = ()
    pod_group: PodGroupChange | None = None
    events: tuple[Event, ...] = ()
    delete_job: bool = False
    requeue_after: float | None = None


@dataclass(frozen=True)
class ParsedJob:
    """A job as a run reads it, once: its spec (in full when its counts are within their bounds, else
    without its replicas: `spec.parse_unplanned`), its framework, the problems that keep it from running
    (counts past their bounds, else validation's; not looked for once it finished) and whether it is
    being deleted."""

    spec: JobSpec[Any]
    framework: Framework[Any]
    problems: tuple[FieldError, ...] = ()
    deleting: bool = False


def parse_job(job: dict[str, Any], framework: Framework[Any]) -> ParsedJob:
    """`job` read for `plan()`: bounds first (jobs/bounds.py), so a job past them is never parsed in full
    nor validated, at a cost its counts do not change."""
    over_bounds = bounds.count_errors(job, framework)
    if over_bounds:
        spec: JobSpec[Any] = jobspec.parse_unplanned(job, framework)
    else:
        spec = jobspec.parse(job, framework)
    deleting = bool(as_dict(job.get("metadata")).get("deletionTimestamp"))
    checked = deleting or over_bounds or is_finished(as_dict(job.get("status")))
    problems = over_bounds or ([] if checked else validate(job, framework))
    return ParsedJob(spec, framework, tuple(problems), deleting)


@dataclass(frozen=True)
class Observed:
    """What a run read besides the job: its children (those it does not control are dropped by `of`, never
    touched), and with a gang `scheduler` (the operator's setting) the job's PodGroup as read (None: none
    yet) and the values of the PriorityClasses `gang.priority_class_names` asked for."""

    pods: tuple[dict[str, Any], ...] = ()
    services: tuple[dict[str, Any], ...] = ()
    #: The job's ConfigMaps, for a framework that has some (MPI's hostfile).
    config_maps: tuple[dict[str, Any], ...] = ()
    scheduler: gang.GangScheduler | None = None
    pod_group: dict[str, Any] | None = None
    priorities: Mapping[str, int] | None = None

    @classmethod
    def of(
        cls,
        job_uid: str,
        pods: Iterable[dict[str, Any]],
        services: Iterable[dict[str, Any]],
        config_maps: Iterable[dict[str, Any]] = (),
        *,
        scheduler: gang.GangScheduler | None = None,
        pod_group: dict[str, Any] | None = None,
        priorities: Mapping[str, int] | None = None,
    ) -> Observed:
        """The children listed by the job's `argoml.io/job-name` label that the job controls."""
        return cls(
            tuple(p for p in pods if controlled_by(p, job_uid)),
            tuple(s for s in services if controlled_by(s, job_uid)),
            tuple(c for c in config_maps if controlled_by(c, job_uid)),
            scheduler,
            pod_group,
            priorities,
        )


def plan(parsed: ParsedJob, observed: Observed, previous: dict[str, Any], now: datetime) -> Plan:
    """Decide everything for one reconcile of a job read by `parse_job`, given what the run `observed` and
    the job's `previous` status. Every decision below reads the parsed spec, never the raw job. A job with
    problems is never planned: it fails with FailedValidation naming each field, once."""
    framework, spec = parsed.framework, parsed.spec
    if parsed.deleting:
        return Plan(status=previous)
    seen = _Round(
        spec,
        framework,
        previous,
        list(observed.pods),
        list(observed.services),
        list(observed.config_maps),
        now,
    )
    gang_step = _GangStep(observed.scheduler, observed.pod_group, observed.priorities, spec.uid)
    if is_finished(previous):
        return gang_step.removed(_finished(seen))
    if parsed.problems:
        problems = "; ".join(map(str, parsed.problems))
        message = f"{framework.kind} {spec.namespace}/{spec.name} is invalid: " + problems
        failure = Failure(FAILED_VALIDATION, message)
        status = aggregate(spec, previous, [], now, framework=framework, failure=failure)
        return Plan(status=status, events=_transition_events(previous, status))
    if spec.run_policy.suspend:
        return gang_step.removed(_suspended(seen))
    decided = _active(seen)
    if is_finished(decided.status):
        return gang_step.removed(decided)
    return gang_step.applied(spec, framework, decided)


@dataclass(frozen=True)
class _GangStep:
    """The PodGroup part of a Plan: kept in step with the job while it runs, deleted once it finishes
    or is suspended (as Kubeflow does); nothing at all without a gang scheduler."""

    scheduler: gang.GangScheduler | None
    observed: dict[str, Any] | None
    priorities: Mapping[str, int] | None
    job_uid: str

    def removed(self, decided: Plan) -> Plan:
        if self.scheduler is None or self.observed is None or not self._ours():
            return decided
        change = PodGroupChange("delete", self.scheduler.resource, self.observed)
        return replace(decided, pod_group=change)

    def applied(self, job: JobSpec[Any], framework: Framework[Any], decided: Plan) -> Plan:
        """Create or update the PodGroup, mark the pods to create for the gang scheduler, and hold all
        creations back while Volcano has not admitted the group."""
        scheduler = self.scheduler
        if scheduler is None:
            return decided
        desired = gang.desired_pod_group(job, scheduler, self.observed, self.priorities)
        change = None
        if self.observed is None:
            change = PodGroupChange("create", scheduler.resource, desired)
        elif self._ours() and gang.needs_update(self.observed, desired):
            change = PodGroupChange("replace", scheduler.resource, gang.updated(self.observed, desired))
        if gang.delays_pods(scheduler, self.observed):
            return replace(decided, create=(), pod_group=change)
        slots = {slot_name(job, slot): slot for slot in job.slots}
        for manifest in decided.create:
            if manifest.get("kind") == "Pod" and name_of(manifest) in slots:
                replica_type = slots[name_of(manifest)].replica_type
                gang.decorate_pod(manifest, scheduler, job.name, replica_type)
        events = decided.events
        others = gang.other_schedulers(job, scheduler)
        if others and any(m.get("kind") == "Pod" for m in decided.create):
            warning = Event(
                "Warning",
                SET_POD_TEMPLATE_SCHEDULER_NAME,
                f"Another scheduler ({', '.join(others)}) is specified when gang-scheduling is enabled "
                "and it will not be overwritten",
            )
            events += (warning,)
        return replace(decided, pod_group=change, events=events)

    def _ours(self) -> bool:
        return self.observed is not None and controlled_by(self.observed, self.job_uid)


@dataclass(frozen=True)
class _Round:
    """What one plan of a job that is planned reads: the parsed job, its framework, its previous status,
    the children observed, and the time."""

    job: JobSpec[Any]
    framework: Framework[Any]
    previous: dict[str, Any]
    pods: list[dict[str, Any]]
    services: list[dict[str, Any]]
    config_maps: list[dict[str, Any]]
    now: datetime

    def status(self, failure: Failure | None = None) -> dict[str, Any]:
        """The status the pods make of the previous one (`failure`, decided outside them, wins)."""
        return aggregate(
            self.job, self.previous, self.pods, self.now, framework=self.framework, failure=failure
        )


def _finished(seen: _Round) -> Plan:
    """A finished job only cleans up: cleanPodPolicy, then ttlSecondsAfterFinished."""
    status = seen.status()
    policy = seen.job.run_policy
    deletions = _clean_up(seen.pods, seen.services, policy.clean_pod_policy)
    ttl = policy.ttl_seconds_after_finished
    remaining = seconds_until(parse_time(status.get("completionTime")), ttl, seen.now)
    if remaining is not None and remaining <= 0:
        message = f"Deleting {seen.framework.kind} {seen.job.name}: finished {ttl}s ago"
        event = Event("Normal", "TTLExpired", message)
        return Plan(status=status, delete=tuple(deletions), events=(event,), delete_job=True)
    return Plan(status=status, delete=tuple(deletions), requeue_after=remaining)


def _suspended(seen: _Round) -> Plan:
    """A suspended job keeps no pods or services; resuming recreates them and restarts the deadline."""
    status = seen.status()
    deletions = [
        _deletion(kind, child, "Suspend", "job suspended")
        for kind, children in (("Pod", seen.pods), ("Service", seen.services))
        for child in children
        if not is_terminating(child)
    ]
    return Plan(status=status, delete=tuple(deletions), events=_transition_events(seen.previous, status))


def _active(seen: _Round) -> Plan:
    """A running job: count restarts, apply deadline and backoff, then converge children or finish."""
    job, framework, pods, services = seen.job, seen.framework, seen.pods, seen.services
    policy = job.run_policy
    to_recreate = _failed_pods_to_recreate(job, framework, pods)
    ledger = RestartLedger.from_status(seen.previous)
    after_recreation = ledger.recreating(to_recreate)
    failure = _forced_failure(job, framework, seen.previous, policy, after_recreation.total(pods), seen.now)
    status = seen.status(failure)
    events = _transition_events(seen.previous, status)

    if is_finished(status):
        status["restarts"], status["restartLedger"] = ledger.total(pods), ledger.to_status()
        stopped = unfinished_pods(pods) if failure is not None else []
        deletions = _pod_deletions(stopped, services, failure.reason, "job failed") if failure else []
        deletions += _clean_up([p for p in pods if p not in stopped], services, policy.clean_pod_policy)
        ttl = policy.ttl_seconds_after_finished
        return Plan(
            status=status,
            delete=tuple(deletions),
            events=events,
            delete_job=ttl == 0,
            requeue_after=float(ttl) if ttl else None,
        )

    status["restarts"], status["restartLedger"] = after_recreation.total(pods), after_recreation.to_status()
    deletions = [
        _deletion(
            "Pod",
            pod,
            "Recreate",
            f"{describe_failure(pod, framework_container_name(pod, framework))}; recreating it",
        )
        for pod in to_recreate
    ]
    creates, updates, scaled_down = _converge(job, framework, pods, services, seen.config_maps)
    deadline = policy.active_deadline_seconds
    return Plan(
        status=status,
        create=tuple(creates),
        update=tuple(updates),
        delete=tuple(deletions + scaled_down),
        events=events,
        requeue_after=seconds_until(parse_time(status.get("startTime")), deadline, seen.now),
    )


def _failed_pods_to_recreate(
    job: JobSpec[Any], framework: Framework[Any], pods: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Failed pods of desired replicas whose restart policy retries them."""
    by_name = {name_of(p): p for p in pods}
    failed = []
    for slot in job.slots:
        pod = by_name.get(slot_name(job, slot))
        policy = job.replicas[slot.replica_type].restart_policy
        if (
            pod is not None
            and outcome(pod, framework_container_name(pod, framework)) == Outcome.FAILED
            and will_restart(policy, pod, framework_container_name(pod, framework))
        ):
            failed.append(pod)
    return failed


def _converge(
    job: JobSpec[Any],
    framework: Framework[Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    config_maps: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Deletion]]:
    """What to create (ConfigMaps and Secrets, Services, then Pods), ConfigMaps to update, and children
    outside the spec to delete (scale down).

    A pod still terminating holds its name: its replacement is created once it is gone. A pod the framework
    holds back (MPI's launcher, until its workers exist) waits for a later run. A Secret is never read:
    it is created whenever a pod is (409 when it exists), so that no pod is created without it.
    """
    wanted = {slot_name(job, slot): slot for slot in job.slots}
    observed_pods = {name_of(p): p for p in pods}
    service_names = {name_of(s) for s in services}
    observed_config_maps = {name_of(c): c for c in config_maps}
    extras = extra_children(job, framework, pods)
    new_pods = [
        build_pod(job, framework, slot)
        for name, slot in wanted.items()
        if name not in observed_pods and framework.may_create_pod(job, *slot, observed_pods)
    ]
    creates, updates = [], []
    for extra in extras:
        kind, name = extra.get("kind"), name_of(extra)
        if kind == "ConfigMap" and name in observed_config_maps:
            current = observed_config_maps[name]
            if current.get("data") != extra.get("data"):
                # Listed objects carry no kind; the observed resourceVersion is the update's precondition.
                updates.append({**current, "apiVersion": "v1", "kind": kind, "data": extra.get("data")})
        elif kind == "ConfigMap" or (kind == "Secret" and new_pods):
            creates.append(extra)
    replica_services = set(wanted) if framework.replica_services else set()
    creates += [m for m in extras if m.get("kind") == "Service" and name_of(m) not in service_names]
    creates += [
        build_service(job, framework, wanted[name])
        for name in wanted
        if name in replica_services and name not in service_names
    ]
    creates += new_pods
    wanted_services = replica_services | {name_of(m) for m in extras if m.get("kind") == "Service"}
    deletions = [
        _deletion(kind, obj, "ScaleDown", "not in the spec")
        for kind, objects, names in (("Pod", pods, wanted), ("Service", services, wanted_services))
        for obj in objects
        if name_of(obj) not in names and not is_terminating(obj)
    ]
    return creates, updates, deletions


def _clean_up(
    pods: list[dict[str, Any]], services: list[dict[str, Any]], clean_pod_policy: str
) -> list[Deletion]:
    """cleanPodPolicy on a finished job: the chosen pods with their services (All: every service)."""
    message = f"cleanPodPolicy {clean_pod_policy}"
    deletions = _pod_deletions(pods_to_clean(pods, clean_pod_policy), services, "CleanPodPolicy", message)
    if clean_pod_policy == "All":
        going = {d.name for d in deletions if d.kind == "Service"}
        orphans = [s for s in services if name_of(s) not in going and not is_terminating(s)]
        deletions += [_deletion("Service", s, "CleanPodPolicy", message) for s in orphans]
    return deletions


def _forced_failure(
    job: JobSpec[Any],
    framework: Framework[Any],
    previous: dict[str, Any],
    policy: RunPolicy,
    restarts: int,
    now: datetime,
) -> Failure | None:
    """Deadline first, then backoff: failures decided by time and counts rather than by a replica."""
    ref = f"{framework.kind} {job.namespace}/{job.name}"
    deadline = policy.active_deadline_seconds
    remaining = seconds_until(parse_time(previous.get("startTime")), deadline, now)
    if remaining is not None and remaining <= 0:
        return Failure(DEADLINE_EXCEEDED, f"{ref} has failed because it was active longer than {deadline}s.")
    if backoff_exceeded(restarts, policy.backoff_limit):
        return Failure(
            BACKOFF_LIMIT_EXCEEDED,
            f"{ref} has failed because it would restart {restarts} times, "
            f"more than its backoffLimit of {policy.backoff_limit}.",
        )
    return None


def _pod_deletions(
    pods: list[dict[str, Any]], services: list[dict[str, Any]], reason: str, message: str
) -> list[Deletion]:
    """Delete `pods` and the services that carry their names (a replica's pod and service go together)."""
    by_name = {name_of(s): s for s in services if not is_terminating(s)}
    deletions = []
    for pod in pods:
        deletions.append(_deletion("Pod", pod, reason, message))
        if name_of(pod) in by_name:
            deletions.append(_deletion("Service", by_name[name_of(pod)], reason, message))
    return deletions


def _deletion(kind: str, obj: dict[str, Any], reason: str, message: str) -> Deletion:
    return Deletion(kind, name_of(obj), uid_of(obj), reason, message)


def _transition_events(previous: dict[str, Any] | None, status: dict[str, Any]) -> tuple[Event, ...]:
    """One event per condition that became True (Failed and Restarting warn), and one on resume."""
    events = []
    for now_status, condition in transitions(previous, status):
        warning = now_status == "True" and condition["type"] in (FAILED, RESTARTING)
        events.append(Event("Warning" if warning else "Normal", condition["reason"], condition["message"]))
    return tuple(events)
