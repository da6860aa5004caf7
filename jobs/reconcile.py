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
import functools
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from fields import as_dict
from jobs import apigroups, autoscaling, conf, gang
from jobs import spec as jobspec
from jobs.frameworks import Framework, framework_for
from jobs.manifests import job_selector
from jobs.plan import Observed, ParsedJob, Plan, PodGroupChange, parse_job, plan
from jobs.pods import name_of
from jobs.spec import job_name, job_namespace
from jobs.status import is_finished
from jobs.summary import summarize
from kube import resources
from kube.client import KubeClient, get_client
from kube.controller import children, expectations
from kube.controller.cachedview import CachedView
from kube.controller.runtime import cached_view
from kube.errors import AlreadyExists, ApiError, Conflict, Forbidden, NotFound
from kube.events import EventRecorder, recorder_for
from kube.resources import CONFIGMAP, HORIZONTAL_POD_AUTOSCALER, POD, SECRET, SERVICE, ResourceType

logger = logging.getLogger(__name__)

EVENT_CONTROLLER = "jobs"
JOB_CHILDREN = children.ChildKinds(
    created={"Pod": POD, "Service": SERVICE, "ConfigMap": CONFIGMAP, "Secret": SECRET},
    # What pods mount, then what names them, then the pods.
    creation_order=("ConfigMap", "Secret", "Service", "Pod"),
    # A job's ConfigMaps and Secrets go with the job, through their ownerReference.
    deleted={"Pod": POD, "Service": SERVICE},
    # MPI's hostfile.
    updated={"ConfigMap": CONFIGMAP},
    # The operator may create Secrets, never read them: a run that creates one expects no event of it.
    unwatched=("Secret",),
)
POD_GROUP_VERBS = {"create": "Create", "replace": "Update", "delete": "Delete"}
#: `missing` names the scheduler's API version (`{0.api_version}`, the PodGroup's resource type).
POD_GROUP_WORDING = children.PodGroupWording(
    doing="writing",
    actor="operator",
    missing="install the gang scheduler ({0.api_version}) or turn JOBS_GANG_SCHEDULER off. No pods are"
    " created until then",
    forbidden="grant it in the operator's RBAC (the chart's jobs.gangScheduler value does)",
)


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
            return max(
                waiting, children.MIN_REQUEUE_SECONDS
            )  # the events of the last run's writes are on the way
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
    parsed = parse_job(job, framework)
    pod_group, priorities = _gang_reads(client, scheduler, job, parsed.spec)
    observed = Observed.of(
        parsed.spec.uid,
        pods,
        services,
        config_maps,
        scheduler=scheduler,
        pod_group=pod_group,
        priorities=priorities,
    )
    decided = plan(parsed, observed, as_dict(job.get("status")), conf.now())
    if framework.extra_child_kinds:
        completed = (
            framework.complete_child(m) if m.get("kind") in framework.extra_child_kinds else m
            for m in decided.create
        )
        decided = replace(decided, create=tuple(completed))
    status = with_summary(job, decided.status, parsed.spec.counts)
    # Gang-scheduled jobs and frameworks with more kinds of children (MPI's hostfile) keep the next run.
    simple = scheduler is None and not framework.extra_child_kinds and not decided.delete_job
    # A job never reconciled has no restart ledger to save before anything changes: its status is written
    # once, after its children are created, counting them (a write, its event and its mirror row saved).
    new_job = simple and not as_dict(job.get("status")) and bool(decided.create) and _creates_only(decided)
    if status != as_dict(job.get("status")) and not new_job:
        job = children.write_status(client, rtype, job, status, view)
    recorder = recorder_for(EVENT_CONTROLLER)
    with _running(view, job):
        # A new job's condition events wait for its status write: a stale cache's copy (409) records none.
        applied = apply_plan(
            client, rtype, job, replace(decided, events=()) if new_job else decided, recorder, view
        )
        recount = None
        if applied.created and simple:
            recount = _recount(parsed, observed, status, applied.created)
        if recount is not None:
            job = _count_created(client, rtype, job, recount, parsed, applied.created, recorder, view)
        elif new_job:  # a creation found its child there (409): the status as planned
            job = children.write_status(client, rtype, job, status, view)
        if new_job:
            children.record_all(recorder, job, decided.events, "Reconcile")
    decided = recount or decided
    return children.requeue_after(decided.requeue_after, pod_group_refused=applied.blocked)


def _recount(
    parsed: ParsedJob, observed: Observed, status: dict[str, Any], created: tuple[dict[str, Any], ...]
) -> Plan | None:
    """The plan of the job as this run decided it (`status`) with the children it just created added, when
    that plan only writes the status; None when it would write more (the next run does that)."""
    with_created = replace(
        observed,
        pods=(*observed.pods, *(c for c in created if c.get("kind") == "Pod")),
        services=(*observed.services, *(c for c in created if c.get("kind") == "Service")),
    )
    recount = plan(parsed, with_created, status, conf.now())
    return recount if _creates_only(recount) and not recount.create else None


def _creates_only(decided: Plan) -> bool:
    """The plan writes the status and creates children, if anything: no deletion, update, PodGroup."""
    return not (decided.delete or decided.update or decided.delete_job or decided.pod_group)


def _count_created(
    client: KubeClient,
    rtype: ResourceType,
    job: dict[str, Any],
    recount: Plan,
    parsed: ParsedJob,
    created: tuple[dict[str, Any], ...],
    recorder: EventRecorder,
    view: CachedView | None,
) -> dict[str, Any]:
    """Write the status that counts the children this run created (what Kubeflow's next reconcile would
    write once their events came) and record its condition events; tell the cache their events owe no
    run: one run per new job instead of two. The job written is returned."""
    status = with_summary(job, recount.status, parsed.spec.counts)
    if status != as_dict(job.get("status")):
        job = children.write_status(client, rtype, job, status, view)
    children.in_parallel(
        [functools.partial(children.record, recorder, job, event, "Reconcile") for event in recount.events]
    )
    if view is not None:
        watched = [c for c in created if c.get("kind") not in JOB_CHILDREN.unwatched]
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
    selector = resources.label_selector(job_selector(job))
    calls: list[Callable[[], list[dict[str, Any]]]] = [
        functools.partial(children.list_all, client, POD, namespace, selector),
        functools.partial(children.list_all, client, SERVICE, namespace, selector),
    ]
    if config_maps:
        calls.append(functools.partial(children.list_all, client, CONFIGMAP, namespace, selector))
    found = [future.result() for future in children.in_parallel(calls)]
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

    The children are written by `kube.controller.children.ChildWriter` (each step's calls at once, a step
    after the one before it; errors other than 404/409 raised once the rest was tried). A PodGroup that
    cannot be written is only a Warning event: a missing CRD is not fixed by retrying at once.
    """
    writer = children.ChildWriter(client, job, JOB_CHILDREN, recorder, view)
    writer.delete(decided.delete)
    blocked = decided.pod_group is not None and _apply_pod_group(writer, decided.pod_group)
    made: list[dict[str, Any]] = []
    if not blocked:
        writer.update(decided.update)
        made = writer.create(decided.create)
    writer.finish((event, "Reconcile") for event in decided.events)
    if decided.delete_job:
        # NotFound: already gone; Conflict: a new job took the name, not ours to delete.
        metadata = as_dict(job.get("metadata"))
        with contextlib.suppress(NotFound, Conflict):
            client.delete(rtype, job_name(job), job_namespace(job), uid=str(metadata.get("uid") or ""))
    return Applied(blocked, tuple(made))


@dataclass(frozen=True)
class Applied:
    """What `apply_plan` did that the run goes on with."""

    #: the PodGroup could not be written (nothing was created then)
    blocked: bool
    #: the children created, as the API returned them
    created: tuple[dict[str, Any], ...] = ()


def _apply_pod_group(writer: children.ChildWriter, change: PodGroupChange) -> bool:
    """Create, replace or delete the job's PodGroup (`children.write_pod_group`); True when it could not be
    created or replaced (no child is created then). A write the cluster refuses for good (its CRD missing,
    RBAC) gives a Warning that says what to fix; other errors are raised by the writer, for the queue to
    retry. 409 on create means it exists (the next run reads it), 409 on replace that it changed since read
    (the next run decides again), 404/409 on delete that it is gone or not the one we read."""
    verb = POD_GROUP_VERBS[change.verb]
    holds_pods = change.verb != "delete"
    wording = replace(POD_GROUP_WORDING, missing=POD_GROUP_WORDING.missing.format(change.resource))
    try:
        written = children.write_pod_group(writer.client, change.resource, verb, change.manifest, wording)
    except ApiError as error:
        writer.failed(error, f"Failed{verb}PodGroup", "Reconcile")
        return holds_pods
    if written.event is not None:
        writer.events.append((written.event, verb))
    return written.refused and holds_pods


@cache
def reconciler_for(kind: str) -> Callable[[str, str], float | None]:
    """The reconcile function of `kind` (one object per kind, so registering twice is harmless): what
    jobs/controllers.py registers for each framework's kind in each group."""

    def reconcile(namespace: str, name: str) -> float | None:
        return reconcile_job(kind, namespace, name)

    reconcile.__qualname__ = f"reconcile_{kind.lower().replace('.', '_')}"
    return reconcile
