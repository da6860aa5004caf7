"""The reconcile loop of training jobs: read the job and its children, decide with `plan()`, apply the Plan.

The only place that changes the cluster for a job. The order is the Plan's contract (jobs/plan.py):
status first (it carries the restart ledger, so a restart is counted before its pod goes away), then
deletions, then creations (services before pods), then events, then the job's own deletion. Every step is
safe to repeat: names are deterministic, deletions carry the uid they are meant for, 404 and 409 are
success. Any other error raises, and the queue retries the key with backoff.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from functools import cache
from typing import Any

from jobs import conf
from jobs.controllers import job_resource
from jobs.frameworks import Framework, framework_for, kinds
from jobs.manifests import job_selector
from jobs.plan import Deletion, Event, Plan, creation_event, deletion_event, plan
from jobs.spec import as_dict
from jobs.status import is_finished
from jobs.summary import replica_summary
from kube.client import KubeClient, get_client
from kube.errors import ApiError, Conflict, NotFound
from kube.events import EventRecorder, recorder_for
from kube.queue import register
from kube.resources import POD, SERVICE, ResourceType

logger = logging.getLogger(__name__)

EVENT_CONTROLLER = "jobs"
#: Never requeue sooner than this: a deadline or TTL that is due now is handled by the next run anyway.
MIN_REQUEUE_SECONDS = 0.5
CHILD_TYPES = {"Pod": POD, "Service": SERVICE}


def reconcile_job(kind: str, namespace: str, name: str) -> float | None:
    """Converge one job; returns seconds until it must be looked at again (deadline, TTL), or None."""
    framework = framework_for(kind, cluster_domain=conf.cluster_domain())
    rtype = job_resource(framework)
    client = get_client()
    try:
        job = client.get(rtype, name, namespace)
    except NotFound:
        return None  # deleted: the garbage collector removes its children through their ownerReferences
    selector = ",".join(f"{key}={value}" for key, value in job_selector(job).items())
    pods = _list(client, POD, namespace, selector)
    services = _list(client, SERVICE, namespace, selector)
    decided = plan(job, pods, services, conf.now(), framework=framework)
    status = with_summary(job, decided.status, framework)
    if status != as_dict(job.get("status")):
        job = _write_status(client, rtype, job, status)
    apply_plan(client, rtype, job, decided, recorder_for(EVENT_CONTROLLER))
    if decided.requeue_after is None:
        return None
    return max(decided.requeue_after, MIN_REQUEUE_SECONDS)


def with_summary(job: dict[str, Any], status: dict[str, Any], framework: Framework) -> dict[str, Any]:
    """The status with `replicaSummary` (the printer column) computed from it; a finished job keeps the
    summary it finished with."""
    previous = as_dict(job.get("status"))
    if is_finished(previous) and "replicaSummary" in previous:
        return {**status, "replicaSummary": previous["replicaSummary"]}
    if not status:
        return status
    return {**status, "replicaSummary": replica_summary(job, status, framework)}


def apply_plan(
    client: KubeClient, rtype: ResourceType, job: dict[str, Any], decided: Plan, recorder: EventRecorder
) -> None:
    """Steps 2-4 of the Plan: delete, create, record events, delete the job. Creation or deletion errors
    other than 404/409 are recorded as Warning events and raised after the rest was tried."""
    metadata = as_dict(job.get("metadata"))
    namespace = str(metadata.get("namespace") or "")
    failures: list[ApiError] = []
    for deletion in decided.delete:
        error = _delete_child(client, namespace, deletion)
        if error is None:
            _record(recorder, job, deletion_event(deletion), "Delete")
        else:
            failures.append(error)
            _record(recorder, job, Event("Warning", f"FailedDelete{deletion.kind}", str(error)), "Delete")
    for manifest in decided.create:
        error = _create_child(client, namespace, manifest)
        if error is None:
            _record(recorder, job, creation_event(manifest), "Create")
        else:
            failures.append(error)
            kind = str(manifest.get("kind"))
            _record(recorder, job, Event("Warning", f"FailedCreate{kind}", str(error)), "Create")
    for event in decided.events:
        _record(recorder, job, event, "Reconcile")
    if failures:
        raise failures[0]
    if decided.delete_job:
        # NotFound: already gone; Conflict: a new job took the name, not ours to delete.
        with contextlib.suppress(NotFound, Conflict):
            client.delete(rtype, str(metadata.get("name")), namespace, uid=str(metadata.get("uid") or ""))


def _list(client: KubeClient, rtype: ResourceType, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.list_pages(rtype, namespace, label_selector=selector):
        items += page.get("items") or []
    return items


def _write_status(
    client: KubeClient, rtype: ResourceType, job: dict[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    """Replace the status (not merge: a field the plan dropped, like startTime while suspended, must go).
    The job's resourceVersion is the precondition: a job changed since we read it gives Conflict, and the
    retry decides again from what it is now."""
    return client.replace(rtype, {**job, "status": status}, subresource="status")


def _delete_child(client: KubeClient, namespace: str, deletion: Deletion) -> ApiError | None:
    try:
        client.delete(CHILD_TYPES[deletion.kind], deletion.name, namespace, uid=deletion.uid)
    except (NotFound, Conflict):
        return None  # gone already, or the name now belongs to a newer object we must not touch
    except ApiError as error:
        logger.warning("could not delete %s %s: %s", deletion.kind, deletion.name, error)
        return error
    return None


def _create_child(client: KubeClient, namespace: str, manifest: dict[str, Any]) -> ApiError | None:
    try:
        client.create(CHILD_TYPES[str(manifest["kind"])], manifest, namespace)
    except Conflict:
        return None  # it exists: a previous run made it, and the next plan sees it
    except ApiError as error:
        logger.warning("could not create %s %s: %s", manifest["kind"], manifest["metadata"]["name"], error)
        return error
    return None


def _record(recorder: EventRecorder, job: dict[str, Any], event: Event, action: str) -> None:
    recorder.event(job, event.type, event.reason, event.message, action=action)


@cache
def reconciler_for(kind: str) -> Callable[[str, str], float | None]:
    """The queue's reconcile function for `kind` (one object per kind, so registering twice is harmless)."""

    def reconcile(namespace: str, name: str) -> float | None:
        return reconcile_job(kind, namespace, name)

    reconcile.__qualname__ = f"reconcile_{kind.lower()}"
    return reconcile


def register_job_reconciler(kind: str) -> None:
    """Reconcile `kind` with this loop (a new framework calls this once, see docs/adding-a-framework.md)."""
    register(kind, reconciler_for(kind))


for _kind in kinds():
    register_job_reconciler(_kind)
