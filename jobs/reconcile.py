"""The reconcile loop of training jobs: read the job and its children, decide with `plan()`, apply the Plan.

The only place that changes the cluster for a job. The order is the Plan's contract (jobs/plan.py):
status first (it carries the restart ledger, so a restart is counted before its pod goes away), then
deletions, then creations (services before pods), then events, then the job's own deletion. Every step is
safe to repeat: names are deterministic, deletions carry the uid they are meant for, 404 and 409 are
success. Any other error raises, and the queue retries the key with backoff.

In the leader the reads come from the informers' cache (docs/controllers.md, "Reconciles read the
leader's cache"); everywhere else from the API.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, TypeVar

from jobs import apigroups, autoscaling, bounds, conf, gang
from jobs import spec as jobspec
from jobs.frameworks import Framework, framework_for, kinds
from jobs.manifests import job_selector
from jobs.plan import Deletion, Event, Plan, PodGroupChange, creation_event, deletion_event, plan
from jobs.pods import name_of
from jobs.spec import as_dict, job_name, job_namespace
from jobs.status import is_finished
from jobs.summary import summarize
from kube import expectations
from kube.client import KubeClient, get_client
from kube.errors import AlreadyExists, ApiError, Conflict, Forbidden, NotFound
from kube.events import EventRecorder, recorder_for
from kube.queue import register
from kube.resources import CONFIGMAP, HORIZONTAL_POD_AUTOSCALER, POD, SECRET, SERVICE, ResourceType
from kube.runtime import CachedView, cached_view

logger = logging.getLogger(__name__)
T = TypeVar("T")

EVENT_CONTROLLER = "jobs"
#: Never requeue sooner than this: a deadline or TTL that is due now is handled by the next run anyway.
MIN_REQUEUE_SECONDS = 0.5
CHILD_TYPES = {"Pod": POD, "Service": SERVICE, "ConfigMap": CONFIGMAP, "Secret": SECRET}
#: What a plan may delete (a job's ConfigMaps and Secrets go with the job, through their ownerReference).
DELETED_TYPES = {"Pod": POD, "Service": SERVICE}
#: The order children are created in: what pods mount, then what names them, then the pods.
CREATION_ORDER = ("ConfigMap", "Secret", "Service", "Pod")
#: Children the informers do not watch (the operator may create Secrets, never read them): a run that
#: creates one expects no event of it.
UNWATCHED_KINDS = ("Secret",)
#: A PodGroup that could not be written (its CRD missing, RBAC): look again this much later. Until then
#: the job gets no pods, which a gang scheduler would otherwise see without their group.
POD_GROUP_RETRY_SECONDS = 30.0
POD_GROUP_VERBS = {"create": "Create", "replace": "Update", "delete": "Delete"}


def reconcile_job(kind: str, namespace: str, name: str) -> float | None:
    """Converge one job; returns seconds until it must be looked at again (deadline, TTL), or None.
    `kind` is the key's: `TFJob`, or `TFJob.kubeflow.org` for Kubeflow's group (jobs/apigroups.py).

    In the process that leads, the job and its children come from the informers' cache: no API read. A
    stale cache is caught by the status write's resourceVersion precondition (409): only then does the run
    read the job and its children from the API and decide again. Elsewhere every run reads the API.
    """
    framework_kind, api_version = apigroups.split_controller_kind(kind)
    framework = framework_for(framework_kind, cluster_domain=conf.cluster_domain())
    rtype = apigroups.job_resource(framework, api_version)
    client = get_client()
    view = cached_view(kind)
    if view is not None:
        waiting = view.waiting(namespace, name)
        if waiting is not None:
            return max(waiting, MIN_REQUEUE_SECONDS)  # the events of the last run's writes are on the way
        job = view.get(namespace, name)
        if job is None:
            return None  # deleted (or not listed yet: its ADDED event will enqueue it again)
        pods = view.children("Pod", namespace, name)
        services = view.children("Service", namespace, name)
        config_maps = view.children("ConfigMap", namespace, name) if _has_config_maps(framework) else []
        try:
            return _converge(client, rtype, framework, job, pods, services, config_maps, view)
        except (Conflict, NotFound):
            logger.info("the cached %s %s/%s was stale; reading it from the API", kind, namespace, name)
    try:
        job = client.get(rtype, name, namespace)
    except NotFound:
        return None  # deleted: the garbage collector removes its children through their ownerReferences
    pods, services, config_maps = _children(client, job, _has_config_maps(framework))
    return _converge(client, rtype, framework, job, pods, services, config_maps, view)


def _has_config_maps(framework: Framework[Any]) -> bool:
    return "ConfigMap" in framework.extra_child_kinds


def _converge(
    client: KubeClient,
    rtype: ResourceType,
    framework: Framework[Any],
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    config_maps: list[dict[str, Any]],
    view: CachedView | None,
) -> float | None:
    """Decide from what was read, then write: the job's missing runPolicy, the HPA (an elastic PyTorchJob),
    status first (Conflict when the job changed since; a new job's comes after its children), the PodGroup
    (with a gang scheduler), children, then the status counting the children created."""
    if "runPolicy" not in as_dict(job.get("spec")) and isinstance(job.get("spec"), dict):
        job = _default_run_policy(client, rtype, job, framework)
    if autoscaling.may_have_hpa(job, framework):
        converge_autoscaler(client, job, framework, recorder_for(EVENT_CONTROLLER))
    scheduler = conf.gang_scheduler()
    parsed = bounds.parse_bounded(job, framework)
    pod_group, priorities = _gang_reads(client, scheduler, job, parsed)
    decided = plan(
        job,
        pods,
        services,
        conf.now(),
        framework=framework,
        scheduler=scheduler,
        pod_group=pod_group,
        priorities=priorities,
        parsed=parsed,
        config_maps=config_maps,
    )
    if framework.extra_child_kinds:
        completed = (
            framework.complete_child(m) if m.get("kind") in framework.extra_child_kinds else m
            for m in decided.create
        )
        decided = replace(decided, create=tuple(completed))
    status = with_summary(job, decided.status, parsed.counts)
    # Gang-scheduled jobs and frameworks with more kinds of children (MPI's hostfile) keep the next run.
    simple = scheduler is None and not framework.extra_child_kinds and not decided.delete_job
    # A job never reconciled has no restart ledger to save before anything changes: its status is written
    # once, after its children are created, counting them (a write, its event and its mirror row saved).
    new_job = simple and not as_dict(job.get("status")) and bool(decided.create) and _creates_only(decided)
    if status != as_dict(job.get("status")) and not new_job:
        job = _write_status(client, rtype, job, status, view)
    recorder = recorder_for(EVENT_CONTROLLER)
    with _running(view, job):
        # A new job's condition events wait for its status write: a stale cache's copy (409) records none.
        applied = apply_plan(
            client, rtype, job, replace(decided, events=()) if new_job else decided, recorder, view
        )
        recount = None
        if applied.created and simple:
            children = (pods, services, config_maps)
            recount = _recount({**job, "status": status}, children, applied.created, framework, parsed)
        if recount is not None:
            job = _count_created(client, rtype, job, recount, parsed, applied.created, recorder, view)
        elif new_job:  # a creation found its child there (409): the status as planned
            job = _write_status(client, rtype, job, status, view)
        if new_job:
            in_parallel([functools.partial(_record, recorder, job, e, "Reconcile") for e in decided.events])
    decided = recount or decided
    blocked = applied.blocked
    requeue = decided.requeue_after
    if blocked:
        requeue = POD_GROUP_RETRY_SECONDS if requeue is None else min(requeue, POD_GROUP_RETRY_SECONDS)
    if requeue is None:
        return None
    return max(requeue, MIN_REQUEUE_SECONDS)


def _recount(
    decided_job: dict[str, Any],
    children: tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]],
    created: tuple[dict[str, Any], ...],
    framework: Framework[Any],
    parsed: jobspec.JobSpec[Any],
) -> Plan | None:
    """The plan of the job as this run decided it (`decided_job`: its status) with the children it just
    created added, when that plan only writes the status; None when it would write more (the next run
    does that)."""
    pods, services, config_maps = children
    recount = plan(
        decided_job,
        [*pods, *(c for c in created if c.get("kind") == "Pod")],
        [*services, *(c for c in created if c.get("kind") == "Service")],
        conf.now(),
        framework=framework,
        parsed=parsed,
        config_maps=config_maps,
    )
    return recount if _creates_only(recount) and not recount.create else None


def _creates_only(decided: Plan) -> bool:
    """The plan writes the status and creates children, if anything: no deletion, update, PodGroup."""
    return not (decided.delete or decided.update or decided.delete_job or decided.pod_group)


def _count_created(
    client: KubeClient,
    rtype: ResourceType,
    job: dict[str, Any],
    recount: Plan,
    parsed: jobspec.JobSpec[Any],
    created: tuple[dict[str, Any], ...],
    recorder: EventRecorder,
    view: CachedView | None,
) -> dict[str, Any]:
    """Write the status that counts the children this run created (what Kubeflow's next reconcile would
    write once their events came) and record its condition events; tell the cache their events owe no
    run: one run per new job instead of two. The job written is returned."""
    status = with_summary(job, recount.status, parsed.counts)
    if status != as_dict(job.get("status")):
        job = _write_status(client, rtype, job, status, view)
    in_parallel([functools.partial(_record, recorder, job, event, "Reconcile") for event in recount.events])
    if view is not None:
        watched = [c for c in created if c.get("kind") not in UNWATCHED_KINDS]
        items = [expectations.created(str(c["kind"]), name_of(c)) for c in watched]
        view.count(job_namespace(job), job_name(job), items)
    return job


@contextlib.contextmanager
def _running(view: CachedView | None, job: dict[str, Any]) -> Iterator[None]:
    """While the run writes, its key waits for it too: the events of its children, arriving meanwhile,
    cannot find nothing pending and enqueue a run before the run counts them. At the end, a run those
    events owe (children it did not count) is enqueued."""
    if view is None:
        yield
        return
    namespace, name = job_namespace(job), job_name(job)
    item = ("run", uuid.uuid4().hex)
    view.expect(namespace, name, [item])
    try:
        yield
    finally:
        view.observe(namespace, name, item)


def _default_run_policy(
    client: KubeClient, rtype: ResourceType, job: dict[str, Any], framework: Framework
) -> dict[str, Any]:
    """Write `spec.runPolicy` with its default into a job that has none, as the mutating webhook would have:
    Kubeflow's SDK cannot read a job without it (`list_jobs` fails on every job of the namespace), and a
    job written while the webhook was off, or by a client that skips it, must still read. The
    resourceVersion is the precondition (Conflict: the job changed since, the retry decides again)."""
    metadata = as_dict(job.get("metadata"))
    patch = {
        "metadata": {"resourceVersion": metadata.get("resourceVersion")},
        "spec": {
            "runPolicy": {
                "cleanPodPolicy": apigroups.default_clean_pod_policy(job, framework.default_clean_pod_policy)
            }
        },
    }
    return client.patch(rtype, job_name(job), patch, job_namespace(job))


def _children(
    client: KubeClient, job: dict[str, Any], config_maps: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The job's pods, services and (when its framework has some) ConfigMaps, listed at once by its name
    label.

    A job without a status has none of ours: the run that creates its children writes its status, so a
    job never reconciled this far needs no lists (the first run of every new job; two requests saved).
    Should a run have died between the two, or someone have wiped a status, the creates answer 409, the
    status is written all the same, and the next run lists again.
    """
    if not as_dict(job.get("status")):
        return [], [], []
    namespace = str(as_dict(job.get("metadata")).get("namespace") or "")
    selector = ",".join(f"{key}={value}" for key, value in job_selector(job).items())
    calls: list[Callable[[], list[dict[str, Any]]]] = [
        functools.partial(_list, client, POD, namespace, selector),
        functools.partial(_list, client, SERVICE, namespace, selector),
    ]
    if config_maps:
        calls.append(functools.partial(_list, client, CONFIGMAP, namespace, selector))
    found = [future.result() for future in in_parallel(calls)]
    return found[0], found[1], found[2] if config_maps else []


def _gang_reads(
    client: KubeClient,
    scheduler: gang.GangScheduler | None,
    job: dict[str, Any],
    parsed: jobspec.JobSpec[Any],
) -> tuple[dict[str, Any] | None, dict[str, int]]:
    """The job's PodGroup (None: none yet) and the PriorityClass values its minResources depends on.

    Nothing is read without a gang scheduler, nor for a job without a status (nothing of ours exists
    yet: the status is written before the PodGroup). A PriorityClass that cannot be read counts 0, as
    in Kubeflow.
    """
    if scheduler is None or not as_dict(job.get("status")):
        return None, {}
    metadata = as_dict(job.get("metadata"))
    try:
        pod_group = client.get(scheduler.resource, str(metadata.get("name")), str(metadata.get("namespace")))
    except NotFound:
        pod_group = None  # none yet, or the scheduler's CRD is missing: creating it tells which
    priorities = {}
    for name in sorted(gang.priority_class_names(parsed)):
        try:
            value = client.get(gang.PRIORITY_CLASS, name).get("value")
        except (NotFound, Forbidden):
            continue
        if isinstance(value, int):
            priorities[name] = value
    return pod_group, priorities


def converge_autoscaler(
    client: KubeClient, job: dict[str, Any], framework: Framework[Any], recorder: EventRecorder
) -> None:
    """Create, update or delete the job's HorizontalPodAutoscaler (jobs/autoscaling.py), before its children
    as Kubeflow does. A create that meets an existing HPA and a delete that finds none are success; a stale
    update raises Conflict, and the retry decides again."""
    metadata = as_dict(job.get("metadata"))
    name, namespace = str(metadata.get("name")), str(metadata.get("namespace") or "")
    try:
        current: dict[str, Any] | None = client.get(HORIZONTAL_POD_AUTOSCALER, name, namespace)
    except NotFound:
        current = None
    decided = autoscaling.change(job, framework, current)
    if decided is None:
        return
    if decided.verb == "foreign":
        note = f"HorizontalPodAutoscaler {name} exists and is not controlled by this {framework.kind}"
        recorder.event(job, "Warning", "FailedCreateHorizontalPodAutoscaler", note, action="Create")
        return
    if decided.verb == "create" and decided.manifest is not None:
        with contextlib.suppress(AlreadyExists):
            client.create(HORIZONTAL_POD_AUTOSCALER, decided.manifest, namespace)
        reason, note = "SuccessfulCreateHorizontalPodAutoscaler", f"Created horizontalpodautoscaler: {name}"
    elif decided.verb == "update" and decided.manifest is not None:
        client.replace(HORIZONTAL_POD_AUTOSCALER, decided.manifest)
        reason, note = "SuccessfulUpdateHorizontalPodAutoscaler", f"Updated horizontalpodautoscaler: {name}"
    else:
        with contextlib.suppress(NotFound, Conflict):
            client.delete(HORIZONTAL_POD_AUTOSCALER, name, namespace, uid=decided.uid)
        reason, note = "SuccessfulDeleteHorizontalPodAutoscaler", f"Deleted horizontalpodautoscaler: {name}"
    recorder.event(job, "Normal", reason, note, action=decided.verb.capitalize())


def with_summary(
    job: dict[str, Any], status: dict[str, Any], wanted_replicas: Mapping[str, int]
) -> dict[str, Any]:
    """The status with `replicaSummary` (the printer column) computed from it and the replica counts the
    spec wants; a finished job keeps the summary it finished with."""
    previous = as_dict(job.get("status"))
    if is_finished(previous) and "replicaSummary" in previous:
        return {**status, "replicaSummary": previous["replicaSummary"]}
    if not status:
        return status
    return {**status, "replicaSummary": summarize(wanted_replicas, status)}


def apply_plan(
    client: KubeClient,
    rtype: ResourceType,
    job: dict[str, Any],
    decided: Plan,
    recorder: EventRecorder,
    view: CachedView | None = None,
) -> Applied:
    """Steps 2-4 of the Plan: delete, write the PodGroup, update ConfigMaps, create ConfigMaps and Secrets,
    services, pods, record events, delete the job. Returns whether the PodGroup could not be written
    (nothing was created then) and the children created.

    Each step's calls run concurrently (they are independent), and a step starts once the one before it
    is done, so services still exist before pods and nothing is created before a deletion it depends on.
    Errors other than 404/409 become Warning events and are raised once the rest was tried; a PodGroup
    that cannot be written is only a Warning event (a missing CRD is not fixed by retrying at once). With a
    `view`, each deletion and creation is expected before it is sent, so the next run waits until the cache
    shows it (a write that fails or finds the object already there is no longer expected).
    """
    metadata = as_dict(job.get("metadata"))
    namespace = str(metadata.get("namespace") or "")
    expect = _Expecting(view, namespace, str(metadata.get("name") or ""))
    events: list[tuple[Event, str]] = []
    failures: list[ApiError] = []

    def failed(error: ApiError, reason: str, action: str) -> None:
        failures.append(error)
        events.append((Event("Warning", reason, str(error)), action))

    deleted: list[Deletion] = []
    expect.items([expectations.deleted(d.kind, d.name) for d in decided.delete])
    results = in_parallel([functools.partial(_delete_child, client, namespace, d) for d in decided.delete])
    for deletion, future in zip(decided.delete, results, strict=True):
        error = future.result()
        if error is None:
            deleted.append(deletion)
        else:
            expect.not_coming(expectations.deleted(deletion.kind, deletion.name))
            failed(error, f"FailedDelete{deletion.kind}", "Delete")
    events += [(event, "Delete") for event in deletion_events(deleted)]
    blocked = False
    if decided.pod_group is not None:
        try:
            pod_group_event = _apply_pod_group(client, decided.pod_group)
        except ApiError as pod_group_error:
            failed(pod_group_error, f"Failed{POD_GROUP_VERBS[decided.pod_group.verb]}PodGroup", "Reconcile")
            pod_group_event, blocked = None, decided.pod_group.verb != "delete"
        if pod_group_event is not None:
            events.append(pod_group_event)
            blocked = pod_group_event[0].type == "Warning" and decided.pod_group.verb != "delete"
    updates = [] if blocked else list(decided.update)
    updated = in_parallel([functools.partial(_update_child, client, namespace, m) for m in updates])
    for manifest, update in zip(updates, updated, strict=True):
        update_error = update.result()
        if update_error is not None:
            failed(update_error, f"FailedUpdate{manifest.get('kind')}", "Update")
    if not blocked:
        # Every creation is expected before the first is sent: the event of the last service must not
        # enqueue a run that finds the pods, created next, not yet expected.
        watched = [
            m
            for m in decided.create
            if m.get("kind") in CREATION_ORDER and m.get("kind") not in UNWATCHED_KINDS
        ]
        expect.items([expectations.created(str(m.get("kind")), name_of(m)) for m in watched])
    made: list[dict[str, Any]] = []
    for kind in CREATION_ORDER if not blocked else ():
        manifests = [m for m in decided.create if m.get("kind") == kind]
        creations = in_parallel([functools.partial(_create_child, client, namespace, m) for m in manifests])
        created = []
        for manifest, creation in zip(manifests, creations, strict=True):
            outcome = creation.result()
            if isinstance(outcome, dict):
                created.append(manifest)
                made.append(outcome)
                continue
            if kind not in UNWATCHED_KINDS:
                expect.not_coming(expectations.created(kind, name_of(manifest)))
            if isinstance(outcome, ApiError):
                failed(outcome, f"FailedCreate{kind}", "Create")
        events += [(event, "Create") for event in creation_events(created)]
    events += [(event, "Reconcile") for event in decided.events]
    in_parallel([functools.partial(_record, recorder, job, event, action) for event, action in events])
    if failures:
        raise failures[0]
    if decided.delete_job:
        # NotFound: already gone; Conflict: a new job took the name, not ours to delete.
        with contextlib.suppress(NotFound, Conflict):
            client.delete(rtype, str(metadata.get("name")), namespace, uid=str(metadata.get("uid") or ""))
    return Applied(blocked, tuple(made))


@dataclass(frozen=True)
class Applied:
    """What `apply_plan` did that the run goes on with."""

    #: the PodGroup could not be written (nothing was created then)
    blocked: bool
    #: the children created, as the API returned them
    created: tuple[dict[str, Any], ...] = ()


def _apply_pod_group(client: KubeClient, change: PodGroupChange) -> tuple[Event, str] | None:
    """Create, replace or delete the job's PodGroup; the event to record (None: nothing happened that
    the user must see). A write the cluster refuses for good (its CRD missing, RBAC) gives a Warning
    that says what to fix; other errors raise, for the queue to retry. 409 on create means it exists
    (the next run reads it), 409 on replace that it changed since read (the next run decides again),
    404/409 on delete that it is gone or not the one we read."""
    metadata = change.manifest["metadata"]
    name, namespace = metadata["name"], metadata.get("namespace")
    where = f"{change.resource.plural}.{change.resource.group}"
    verb = POD_GROUP_VERBS[change.verb]
    try:
        if change.verb == "create":
            client.create(change.resource, change.manifest, namespace)
        elif change.verb == "replace":
            client.replace(change.resource, change.manifest)
        else:
            client.delete(change.resource, name, namespace, uid=str(metadata.get("uid") or ""))
    except Conflict:
        return None
    except NotFound:
        if change.verb == "delete":
            return None
        message = (
            f"Error writing PodGroup {name}: the cluster has no {where}; install the gang scheduler "
            f"({change.resource.api_version}) or turn JOBS_GANG_SCHEDULER off. No pods are created until then"
        )
        return Event("Warning", f"Failed{verb}PodGroup", message), verb
    except Forbidden as error:
        message = (
            f"Error writing PodGroup {name}: the operator may not {verb.lower()} {where} ({error}); "
            "grant it in the operator's RBAC (the chart's jobs.gangScheduler value does)"
        )
        return Event("Warning", f"Failed{verb}PodGroup", message), verb
    return Event("Normal", f"Successful{verb}PodGroup", f"{verb}d PodGroup: {name}"), verb


def creation_events(manifests: list[dict[str, Any]]) -> list[Event]:
    """One event per kind for the children one run created ("Created pods: a, b, c"), not one per child:
    a 100-replica job would otherwise write 200 events, most of them dropped by the spam filter."""
    if len(manifests) == 1:
        return [creation_event(manifests[0])]
    by_kind: dict[str, list[str]] = {}
    for manifest in manifests:
        by_kind.setdefault(str(manifest.get("kind")), []).append(name_of(manifest))
    return [
        Event("Normal", f"SuccessfulCreate{kind}", f"Created {kind.lower()}s: {', '.join(names)}")
        for kind, names in by_kind.items()
    ]


def deletion_events(deletions: list[Deletion]) -> list[Event]:
    """One event per kind and cause for the children one run deleted ("Deleted pods: a, b (suspended)")."""
    if len(deletions) == 1:
        return [deletion_event(deletions[0])]
    groups: dict[tuple[str, str], list[str]] = {}
    for deletion in deletions:
        groups.setdefault((deletion.kind, deletion.message), []).append(deletion.name)
    return [
        Event("Normal", f"SuccessfulDelete{kind}", f"Deleted {kind.lower()}s: {', '.join(names)} ({message})")
        for (kind, message), names in groups.items()
    ]


def in_parallel(calls: list[Callable[[], T]]) -> list[Future[T]]:
    """Run independent API calls at once and wait for all; their results (or errors) in order.

    A reconcile is a few rounds of calls that do not depend on each other (a job's 8 children, its
    events); run one by one, a reconcile waits for the sum of their round trips instead of the longest.
    """
    if len(calls) <= 1:
        return [_done(call) for call in calls]
    executor = _executor()
    # Each call runs in a copy of this context, so its log lines still carry the controller and key.
    futures = [executor.submit(contextvars.copy_context().run, call) for call in calls]
    wait(futures)
    return futures


def _done(call: Callable[[], T]) -> Future[T]:
    future: Future[T] = Future()
    try:
        future.set_result(call())
    except BaseException as error:  # handed to the caller through the future, as the executor would
        future.set_exception(error)
    return future


_executors: dict[int, ThreadPoolExecutor] = {}


def _executor() -> ThreadPoolExecutor:
    """The process's thread pool (per pid: a forked pool process must not inherit its parent's threads)."""
    pid = os.getpid()
    executor = _executors.get(pid)
    if executor is None:
        _executors.clear()
        executor = _executors[pid] = ThreadPoolExecutor(
            max_workers=conf.parallel_calls(), thread_name_prefix="jobs-reconcile"
        )
    return executor


def _list(client: KubeClient, rtype: ResourceType, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.list_pages(rtype, namespace, label_selector=selector):
        items += page.get("items") or []
    return items


def _write_status(
    client: KubeClient,
    rtype: ResourceType,
    job: dict[str, Any],
    status: dict[str, Any],
    view: CachedView | None,
) -> dict[str, Any]:
    """Replace the status (not merge: a field the plan dropped, like startTime while suspended, must go).
    The job's resourceVersion is the precondition: a job changed since we read it gives Conflict, and the
    retry decides again from what it is now. With a `view`, its event is expected (the next run waits for
    the cache to show it, and the event itself enqueues no run)."""
    namespace, name = job_namespace(job), job_name(job)
    expected = view.expect_status(namespace, name, status) if view is not None else None
    try:
        written = client.replace(rtype, {**job, "status": status}, subresource="status")
    except ApiError:
        if view is not None and expected is not None:
            view.observe(namespace, name, expected)  # no event will come
        raise
    if view is not None:
        resource_version = str(as_dict(written.get("metadata")).get("resourceVersion") or "")
        view.expect_version(namespace, name, resource_version, instead_of=expected)
    return written


class _Expecting:
    """The expectations of one run's writes, when its reads came from the cache (a no-op otherwise)."""

    def __init__(self, view: CachedView | None, namespace: str, name: str) -> None:
        self.view, self.namespace, self.name = view, namespace, name

    def items(self, items: list[expectations.Item]) -> None:
        if self.view is not None and items:
            self.view.expect(self.namespace, self.name, items)

    def not_coming(self, item: expectations.Item) -> None:
        if self.view is not None:
            self.view.observe(self.namespace, self.name, item)


def _delete_child(client: KubeClient, namespace: str, deletion: Deletion) -> ApiError | None:
    """None when the child is gone; a 404 or 409 says it was already (or the name now belongs to a newer
    object we must not touch): no event of ours will come, but the cache shows it as it is."""
    try:
        client.delete(DELETED_TYPES[deletion.kind], deletion.name, namespace, uid=deletion.uid)
    except (NotFound, Conflict):
        return None
    except ApiError as error:
        logger.warning("could not delete %s %s: %s", deletion.kind, deletion.name, error)
        return error
    return None


def _update_child(client: KubeClient, namespace: str, manifest: dict[str, Any]) -> ApiError | None:
    """None when replaced, or when it changed or went since read (409/404: the next run decides again).
    Only ConfigMaps are ever updated (MPI's hostfile)."""
    try:
        client.replace(CONFIGMAP, manifest)
    except (NotFound, Conflict):
        return None
    except ApiError as error:
        logger.warning("could not update %s %s: %s", manifest["kind"], name_of(manifest), error)
        return error
    return None


EXISTED = "existed"  # 409: a previous run made it, and the next plan sees it


def _create_child(
    client: KubeClient, namespace: str, manifest: dict[str, Any]
) -> dict[str, Any] | ApiError | str:
    """The child as created, EXISTED, or the error."""
    try:
        return client.create(CHILD_TYPES[str(manifest["kind"])], manifest, namespace)
    except Conflict:
        return EXISTED
    except ApiError as error:
        logger.warning("could not create %s %s: %s", manifest["kind"], manifest["metadata"]["name"], error)
        return error


def _record(recorder: EventRecorder, job: dict[str, Any], event: Event, action: str) -> None:
    recorder.event(job, event.type, event.reason, event.message, action=action)


@cache
def reconciler_for(kind: str) -> Callable[[str, str], float | None]:
    """The queue's reconcile function for `kind` (one object per kind, so registering twice is harmless)."""

    def reconcile(namespace: str, name: str) -> float | None:
        return reconcile_job(kind, namespace, name)

    reconcile.__qualname__ = f"reconcile_{kind.lower().replace('.', '_')}"
    return reconcile


def register_job_reconciler(kind: str) -> None:
    """Reconcile `kind` with this loop (a new framework calls this once, see docs/adding-a-framework.md)."""
    register(kind, reconciler_for(kind))


for _kind in kinds():
    for _api_version in apigroups.API_VERSIONS:
        register_job_reconciler(apigroups.controller_kind(_kind, _api_version))
