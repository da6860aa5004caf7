"""The reconcile loop of TrainJobs, without JobSet: read the TrainJob, its runtime and its children, parse →
resolve → plan (with the progress endpoint of the settings, `status_server`), decide with
`trainer.operator.status`, then write: the runtime generation annotation (once), the status (resourceVersion
precondition), pod deletions, then the hostfile and CA ConfigMaps, the SSH Secret, the headless Service and
the pods of every step whose dependencies are met.

Every step is safe to repeat: names are deterministic, deletions carry the uid they are meant for, 404 and
409 are success. In the leader the reads come from the informers' cache, as in `jobs.reconcile`; a stale
cache is caught by the status write's precondition (409), and only then is the API read.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from fields import FieldError, SpecError
from jobs import conf as jobs_conf
from kube.client import KubeClient, get_client
from kube.controller import children
from kube.controller.cachedview import CachedView
from kube.controller.runtime import cached_view
from kube.errors import Conflict, NotFound
from kube.events import EventRecorder, recorder_for
from kube.resources import CONFIGMAP, CORE_EVENT, PERSISTENT_VOLUME_CLAIM, POD, SECRET, SERVICE, ResourceType
from kube.times import parse_time
from trainer import constants as c
from trainer.models.trainjobs import RUNTIME_GENERATION_ANNOTATION
from trainer.operator import plan as planning
from trainer.operator import podgroup, readers, resolution, spec, sshkeys, status
from trainer.progress import server as progress_server
from trainer.resources import RUNTIMES, TRAIN_JOB

logger = logging.getLogger(__name__)

KIND = c.TRAIN_JOB_KIND
EVENT_CONTROLLER = "trainer"
#: A TrainJob whose runtime is missing or refused: look again this much later (a runtime's events do not
#: enqueue the TrainJobs that name it).
INVALID_RETRY_SECONDS = 15.0
TRAIN_JOB_CHILDREN = children.ChildKinds(
    created={
        "Pod": POD,
        "Service": SERVICE,
        "ConfigMap": CONFIGMAP,
        "Secret": SECRET,
        "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIM,
    },
    # What a TrainJob's pods mount first, then what names them, then the pods.
    creation_order=("ConfigMap", "Secret", "PersistentVolumeClaim", "Service", "Pod"),
    deleted={"Pod": POD},
    # The controller creates the SSH Secret and the volume claims and never reads them back.
    unwatched=("Secret", "PersistentVolumeClaim"),
)
POD_GROUP_WORDING = children.PodGroupWording(
    doing="creating",
    actor="controller",
    missing="install the gang scheduler the runtime's podGroupPolicy names",
    forbidden="grant it in its RBAC",
)


@dataclass(frozen=True)
class Observed:
    """What a run reads: the TrainJob, its runtime (None: missing) and the children that lead back to it."""

    job: dict[str, Any]
    runtime: dict[str, Any] | None
    pods: list[dict[str, Any]]
    services: list[dict[str, Any]]
    config_maps: list[dict[str, Any]]


def reconcile_train_job(namespace: str, name: str) -> float | None:
    """Converge one TrainJob; returns seconds until it must be looked at again (its deadline), or None."""
    client = get_client()
    view = cached_view(KIND)
    if view is not None:
        waiting = view.waiting(namespace, name)
        if waiting is not None:
            return max(waiting, children.MIN_REQUEUE_SECONDS)
        job = view.get(namespace, name)
        if job is None:
            return None
        try:
            return _converge(client, _from_cache(view, job), view)
        except (Conflict, NotFound):
            logger.info("the cached TrainJob %s/%s was stale; reading it from the API", namespace, name)
    try:
        job = client.get(TRAIN_JOB, name, namespace)
    except NotFound:
        return None  # deleted: the garbage collector removes its children through their ownerReferences
    return _converge(client, _from_api(client, job), view)


def _runtime_ref(job: Mapping[str, Any]) -> tuple[str, str]:
    ref = (job.get("spec") or {}).get("runtimeRef") or {}
    return str(ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME), str(ref.get("name") or "")


def _from_cache(view: CachedView, job: dict[str, Any]) -> Observed:
    metadata = job["metadata"]
    namespace, name = metadata.get("namespace") or "", metadata["name"]
    kind, runtime_name = _runtime_ref(job)
    runtime_namespace = namespace if kind == c.TRAINING_RUNTIME else ""
    return Observed(
        job=job,
        runtime=view.lookup(kind, runtime_namespace, runtime_name) if kind in RUNTIMES else None,
        pods=view.children("Pod", namespace, name),
        services=view.children("Service", namespace, name),
        config_maps=view.children("ConfigMap", namespace, name),
    )


def _from_api(client: KubeClient, job: dict[str, Any]) -> Observed:
    metadata = job["metadata"]
    namespace, name = metadata.get("namespace") or "", metadata["name"]
    kind, runtime_name = _runtime_ref(job)
    runtime = None
    if kind in RUNTIMES and runtime_name:
        try:
            runtime = client.get(
                RUNTIMES[kind], runtime_name, namespace if kind == c.TRAINING_RUNTIME else None
            )
        except NotFound:
            runtime = None
    selector = f"{c.LABEL_JOBSET_NAME}={name}"
    listed = [
        future.result()
        for future in children.in_parallel(
            [
                functools.partial(children.list_all, client, rtype, namespace, selector)
                for rtype in (POD, SERVICE, CONFIGMAP)
            ]
        )
    ]
    uid = metadata.get("uid")
    pods, services, config_maps = ([item for item in items if _owned_by(item, uid)] for items in listed)
    return Observed(job, runtime, pods, services, config_maps)


def _owned_by(child: Mapping[str, Any], uid: object) -> bool:
    return any(
        ref.get("controller") and ref.get("uid") == uid
        for ref in child["metadata"].get("ownerReferences") or ()
    )


def _converge(client: KubeClient, seen: Observed, view: CachedView | None) -> float | None:
    """Decide from what was read, then write; Conflict or NotFound when the TrainJob changed meanwhile."""
    job = seen.job
    # Core v1 Events, as Trainer's controller-runtime recorder writes them: Kubeflow's SDK (`get_job_events`)
    # keeps only Events with a firstTimestamp, which events.k8s.io/v1 may not set.
    recorder = recorder_for(EVENT_CONTROLLER, CORE_EVENT)
    managed_by = (job.get("spec") or {}).get("managedBy")
    if managed_by not in (None, "", c.MANAGED_BY_TRAINER):
        return None  # another controller's (MultiKueue): never touched, as Trainer skips it
    if job["metadata"].get("deletionTimestamp"):
        return None  # being deleted: the garbage collector takes its children, none is made again
    try:
        parsed = spec.parse_train_job(job)
        resolved = resolution.resolve(parsed, _runtime(job, seen.runtime))
    except SpecError as error:
        past_limits = [problem for problem in error.errors if isinstance(problem, readers.TooMany)]
        if past_limits:
            _fail_past_limits(client, seen, past_limits, recorder, view)
            return None  # no later run can plan it: its counts are immutable, the bound a setting
        note = f"TrainJob resources reconciliation failed: {error}"[:1000]
        recorder.event(job, "Warning", "TrainJobResourcesCreationFailed", note, action="Reconciling")
        return INVALID_RETRY_SECONDS
    desired = planning.plan(resolved, status_server())
    outcome = status.decide(
        parsed,
        desired,
        {rjob.name: rjob.replicas for rjob in resolved.replicated_jobs},
        [rjob.name for rjob in resolved.replicated_jobs if rjob.ancestor == c.ANCESTOR_TRAINER],
        seen.pods,
        job.get("status") or {},
        created_at=parse_time(job["metadata"].get("creationTimestamp")),
        now=jobs_conf.now(),  # the operator's clock (JOBS_CLOCK): tests point it at the simulator's
    )
    job = _store_status(
        client, job, _record_runtime_generation(client, job, seen.runtime), outcome.status, view
    )
    creations = _creations(parsed, desired, outcome, seen)
    group = podgroup.pod_group(resolved, desired) if outcome.create else None
    pod_group_type = podgroup.resource_of(resolved)
    refused = (
        group is not None
        and pod_group_type is not None
        and not _ensure_pod_group(client, pod_group_type, job, group, recorder)
    )
    if refused:
        # No pods without their PodGroup: a gang scheduler would see them one by one.
        creations = [m for m in creations if m["kind"] != "Pod"]
    _apply(client, job, outcome, creations, recorder, view)
    return children.requeue_after(outcome.requeue_after, pod_group_refused=refused)


def status_server() -> progress_server.StatusServer | None:
    """The progress endpoint the trainer step's pods are told to report to (KEP-2779), or None when
    TRAINER_STATUS_SERVER_URL is not set. The CA file is read at each reconcile, so a rotated CA reaches
    the TrainJobs planned after the rotation."""
    if not settings.TRAINER_STATUS_SERVER_URL:
        return None
    ca_cert = Path(settings.TRAINER_STATUS_CA_CERT_PATH).read_text()
    return progress_server.StatusServer(settings.TRAINER_STATUS_SERVER_URL, ca_cert)


def _runtime(job: dict[str, Any], runtime: dict[str, Any] | None) -> spec.Runtime:
    """The runtime the TrainJob names, parsed; its problems are named on `spec.runtimeRef.name`, as the
    admission webhook names them (each keeps its kind: a count past its bound fails the TrainJob)."""
    kind, name = _runtime_ref(job)
    if runtime is None:
        raise SpecError([FieldError("spec.runtimeRef", f"{kind} {name!r} not found")])
    try:
        return spec.parse_runtime(runtime)
    except SpecError as invalid:
        raise SpecError(
            [
                type(problem)("spec.runtimeRef.name", f"{kind} {name!r}: {problem}")
                for problem in invalid.errors
            ]
        ) from None


def _fail_past_limits(
    client: KubeClient,
    seen: Observed,
    problems: list[readers.TooMany],
    recorder: EventRecorder,
    view: CachedView | None,
) -> None:
    """Fail a TrainJob whose counts are past their bounds, before planning any of it: the Failed condition
    (LimitExceeded) and a Warning event name each field and bound; pods it has (started before the bound
    was lowered) stop, as a failed TrainJob's do."""
    job = seen.job
    message = "; ".join(map(str, problems))
    new_status = status.failed_past_limits(job.get("status") or {}, message, jobs_conf.now())
    written = _store_status(client, job, job, new_status, view)
    if written is not job:
        recorder.event(job, "Warning", status.LIMIT_EXCEEDED_REASON, message[:1000], action="Reconciling")
    stopping = tuple(
        pod for pod in seen.pods if not status.is_terminating(pod) and not status.is_finished(pod)
    )
    _apply(
        client,
        written,
        status.Outcome(new_status, delete=stopping, delete_reason=message),
        [],
        recorder,
        view,
    )


def _store_status(
    client: KubeClient,
    seen: dict[str, Any],
    job: dict[str, Any],
    new_status: dict[str, Any],
    view: CachedView | None,
) -> dict[str, Any]:
    """Write `new_status` on `job` (the TrainJob as read, `seen`, or as this run last wrote it) when it
    differs; the next run waits until the cache shows this run's last write."""
    if new_status != (job.get("status") or {}):
        return children.write_status(client, TRAIN_JOB, job, new_status, view)
    if view is not None and job is not seen:
        meta = job["metadata"]
        namespace, resource_version = meta.get("namespace") or "", str(meta.get("resourceVersion") or "")
        view.expect_version(namespace, meta["name"], resource_version)
    return job


def _ensure_pod_group(
    client: KubeClient,
    pod_group_type: ResourceType,
    job: dict[str, Any],
    group: dict[str, Any],
    recorder: EventRecorder,
) -> bool:
    """Create the TrainJob's PodGroup before the pods it admits, or bring its spec up to date when it
    exists (only runs that create pods get here: the start, a resume, a recreated pod), as Trainer's plugins
    rebuild it while a TrainJob is suspended. False when the cluster refuses for good (no CRD, RBAC): a
    Warning event says what to fix, and no pod is created."""
    written = children.write_pod_group(client, pod_group_type, "Create", group, POD_GROUP_WORDING)
    if written.conflict:
        metadata = group["metadata"]
        try:
            client.patch(pod_group_type, metadata["name"], {"spec": group["spec"]}, metadata["namespace"])
        except NotFound:
            return False  # deleted meanwhile: the next run creates it
        return True
    if written.event is not None:
        children.record(recorder, job, written.event, "Create")
    return not written.refused


def _record_runtime_generation(
    client: KubeClient, job: dict[str, Any], runtime: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Annotate the TrainJob with the runtime generation it started with, once: the runtime's revisions
    (admin) map it to the spec the job ran with."""
    metadata = job["metadata"]
    if runtime is None or RUNTIME_GENERATION_ANNOTATION in (metadata.get("annotations") or {}):
        return job
    generation = (runtime.get("metadata") or {}).get("generation")
    patch = {
        "metadata": {
            "resourceVersion": metadata.get("resourceVersion"),
            "annotations": {RUNTIME_GENERATION_ANNOTATION: str(generation or 0)},
        }
    }
    return client.patch(TRAIN_JOB, metadata["name"], patch, metadata.get("namespace"))


def _creations(
    job: spec.TrainJob, desired: planning.Plan, outcome: status.Outcome, seen: Observed
) -> list[dict[str, Any]]:
    """The Service and ConfigMaps the TrainJob lacks, the pods the decision starts, and with them the volume
    claims of the runtime's volumeClaimPolicies and, with MPI pods, the SSH Secret (created with the pods
    that need them: a 409 says they exist, and the key is never regenerated)."""
    have = {("Service", s["metadata"]["name"]) for s in seen.services}
    have |= {("ConfigMap", m["metadata"]["name"]) for m in seen.config_maps}
    wanted = [] if status.finished(outcome.status) else [desired.service, *desired.config_maps]
    made = [m for m in wanted if (m["kind"], m["metadata"]["name"]) not in have]
    if outcome.create:
        made += desired.claims
    if outcome.create and desired.ssh_auth_secret_name is not None:
        private_key, public_key = sshkeys.generate()
        made.append(sshkeys.secret(job, private_key, public_key))
    return made + list(outcome.create)


def _apply(
    client: KubeClient,
    job: dict[str, Any],
    outcome: status.Outcome,
    creations: list[dict[str, Any]],
    recorder: EventRecorder,
    view: CachedView | None,
) -> None:
    """Delete the pods the decision stops, then create kind by kind; record events
    (kube.controller.children)."""
    writer = children.ChildWriter(client, job, TRAIN_JOB_CHILDREN, recorder, view)
    writer.delete(
        [
            children.Deletion(
                "Pod", pod["metadata"]["name"], pod["metadata"]["uid"], "Stop", outcome.delete_reason
            )
            for pod in outcome.delete
        ]
    )
    writer.create(creations)
    writer.finish()
