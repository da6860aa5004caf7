"""One garbage collection: list, judge (garbage.policy), delete, record. The only code here that deletes.

Memory stays bounded by one page: objects are listed with label selectors and `limit`/`continue`, each
page is judged and its garbage deleted before the next page is fetched, and the audit rows of a page are
written in one insert. Deletions carry the object's uid as a precondition (a newer object that took the
name is never deleted) and go through the client's write rate limiter; a 404 or a failed precondition
means the object is already gone, which counts as done. A failure is logged and recorded on the run, and
the run goes on with the next object.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

import fields
from jobs.crd import JAXJOB, MPIJOB, MXJOB, PADDLEJOB, PYTORCHJOB, TFJOB, XGBOOSTJOB
from kube.client import KubeClient, get_client
from kube.errors import ApiError, Conflict, Gone, NotFound
from kube.resources import POD, SERVICE, ResourceType

from .lock import LockLost, RunLock, redis_client
from .metrics import DELETIONS, RUNS
from .models import GCDeletion, GCNamespacePolicy, GCRun
from .policy import (
    JOB_LABEL,
    WORKFLOW_LABEL,
    JobState,
    Owner,
    Rules,
    Verdict,
    controlled_by_kubeflow_job,
    is_namespace_name,
    job_owner_reference,
    judge_job_child,
    judge_workflow_pod,
    labels,
    metadata,
    namespace_of,
)

logger = logging.getLogger(__name__)

# Every kind the operator runs: a child whose job is of a kind missing here would be collected as an orphan.
JOB_RESOURCES: dict[str, ResourceType] = {
    resource.kind: resource.resource_type
    for resource in (TFJOB, MXJOB, PYTORCHJOB, XGBOOSTJOB, JAXJOB, PADDLEJOB, MPIJOB)
}
# The apiserver filters pods by phase, so pods still pending or running are never even sent to us.
FINISHED_PODS = "status.phase!=Pending,status.phase!=Running"
# A continue token expires (410) when a page takes longer than the apiserver keeps it: list again.
MAX_LIST_RESTARTS = 3
MAX_RECORDED_FAILURES = 100


def load_rules() -> Rules:
    """The retentions and namespace lists from settings, with the admin's per-namespace overrides."""
    return Rules(
        succeeded_seconds=settings.GC_SUCCEEDED_RETENTION_SECONDS,
        failed_seconds=settings.GC_FAILED_RETENTION_SECONDS,
        allow=tuple(settings.GC_NAMESPACES_ALLOW),
        deny=tuple(settings.GC_NAMESPACES_DENY),
        overrides={policy.namespace: policy.as_override() for policy in GCNamespacePolicy.objects.all()},
    )


def collect(
    *,
    dry_run: bool = False,
    namespace: str | None = None,
    now: Callable[[], datetime] = timezone.now,
    client: KubeClient | None = None,
    lock: RunLock | None = None,
) -> GCRun:
    """Run one collection and return its GCRun.

    A real run first takes the lock; when another run holds it, this one records a `skipped` run and
    returns at once. A dry run deletes nothing, so it needs no lock; it records what it would delete.
    `now` is the clock retentions are measured with (tests pass the simulator's).
    """
    if namespace is not None and not is_namespace_name(namespace):
        raise ValueError(f"namespace: {namespace!r} is not a Kubernetes namespace name.")
    client = client or get_client()
    rules = load_rules()
    if dry_run:
        run = GCRun.objects.create(dry_run=True, namespace=namespace or "")
        return Collection(run, client, rules, now).execute()
    lock = lock or RunLock(redis_client(), settings.GC_LOCK_TTL_SECONDS)
    if not lock.acquire():
        logger.warning("Another garbage collection holds the lock; this one does nothing.")
        run = GCRun.objects.create(
            namespace=namespace or "",
            status=GCRun.Status.SKIPPED,
            finished=timezone.now(),
            note="Another garbage collection held the lock; this one did nothing.",
        )
        RUNS.labels(status=run.status).inc()
        return run
    try:
        run = GCRun.objects.create(namespace=namespace or "")
        return Collection(run, client, rules, now, guard=lock.ensure_held).execute()
    finally:
        lock.release()


@dataclass
class Tally:
    """A run's counters, kept in memory and written to its GCRun after every page."""

    scanned: int = 0
    deleted: int = 0
    skipped: int = 0
    errors: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def as_fields(self) -> dict[str, Any]:
        """The GCRun columns of the same names (skip reasons sorted: the admin lists them alike each time)."""
        return {**vars(self), "skip_reasons": dict(sorted(self.skip_reasons.items()))}


@dataclass
class JobIndex:
    """The jobs of the cluster (or namespace) as listed at the start of the children pass."""

    by_uid: dict[str, JobState] = field(default_factory=dict)
    names: set[tuple[str, str, str]] = field(default_factory=set)  # (kind, namespace, name)
    unavailable: set[str] = field(default_factory=set)  # kinds that could not be listed
    gone_uids: set[str] = field(default_factory=set)
    gone_names: set[tuple[str, str]] = field(default_factory=set)  # (namespace, job name)

    def add(self, job: JobState) -> None:
        self.by_uid[job.uid] = job
        self.names.add((job.kind, job.namespace, job.name))


@dataclass
class Collection:
    """The passes of one run over the cluster; `guard()` runs before every deletion (the lock check)."""

    run: GCRun
    client: KubeClient
    rules: Rules
    now: Callable[[], datetime]
    guard: Callable[[], None] = lambda: None
    tally: Tally = field(default_factory=Tally, init=False)
    _pending: list[GCDeletion] = field(default_factory=list, init=False)

    @property
    def namespace(self) -> str | None:
        """The one namespace the run collects in, or None: the whole cluster."""
        return self.run.namespace or None

    def execute(self) -> GCRun:
        mode = "dry run" if self.run.dry_run else "run"
        logger.info("Garbage collection %s %s started", mode, self.run.pk)
        try:
            self._collect_workflow_pods()
            self._collect_job_children()
        except LockLost as exc:
            logger.error("Garbage collection %s stopped: %s", self.run.pk, exc)
            self._finish(GCRun.Status.FAILED, note=f"Stopped: {exc}.")
        except BaseException as exc:
            self._finish(GCRun.Status.FAILED, note=f"Stopped by an unexpected error: {exc!r}")
            raise
        else:
            self._finish(GCRun.Status.PARTIAL if self.tally.errors else GCRun.Status.SUCCEEDED)
        return self.run

    # -- passes --------------------------------------------------------------------------------------

    def _collect_workflow_pods(self) -> None:
        try:
            for pods in self._pages(POD, WORKFLOW_LABEL, FINISHED_PODS):
                now = self.now()
                for pod in pods:
                    self.handle(POD, pod, judge_workflow_pod(pod, now, self.rules))
                self.flush()
        except ApiError as exc:
            self._fail(f"list workflow pods{self._where()}", exc)
            self.flush()

    def _collect_job_children(self) -> None:
        jobs = self._read_jobs()
        for rtype, label_selector, field_selector in (
            (POD, f"{JOB_LABEL},!{WORKFLOW_LABEL}", FINISHED_PODS),
            (SERVICE, JOB_LABEL, None),
        ):
            try:
                for children in self._pages(rtype, label_selector, field_selector):
                    now = self.now()
                    for child in children:
                        owner = self.owner_of(child, jobs)
                        self.handle(rtype, child, judge_job_child(rtype.kind, child, owner, now, self.rules))
                    self.flush()
            except ApiError as exc:
                self._fail(f"list job {rtype.plural}{self._where()}", exc)
                self.flush()

    # -- jobs and owners -----------------------------------------------------------------------------

    def _read_jobs(self) -> JobIndex:
        """Every job of every kind we run. A kind that cannot be listed leaves its children alone."""
        index = JobIndex()
        for kind, rtype in JOB_RESOURCES.items():
            try:
                for jobs in self._pages(rtype):
                    for job in jobs:
                        index.add(JobState.from_job({"kind": kind, **job}))
            except NotFound:
                logger.info("%s is not served by the cluster; its children are left alone", kind)
                index.unavailable.add(kind)
            except ApiError as exc:
                self._fail(f"list {rtype.plural}{self._where()}", exc)
                index.unavailable.add(kind)
        return index

    def owner_of(self, child: fields.RawDict, jobs: JobIndex) -> JobState | Owner:
        """The job that controls `child`, or what is known of its absence.

        A job missing from the index may have been created after it was listed, so absence is
        confirmed with a GET before a child is called an orphan.
        """
        namespace = namespace_of(child)
        reference = job_owner_reference(child, JOB_RESOURCES)
        if reference is None and controlled_by_kubeflow_job(child, JOB_RESOURCES):
            return Owner.UNKNOWN  # a kubeflow.org job's child: not ours to judge, never an orphan
        if reference is None:
            return self._owner_by_label(namespace, str(labels(child).get(JOB_LABEL) or ""), jobs)
        if reference.kind in jobs.unavailable:
            return Owner.UNKNOWN
        known = jobs.by_uid.get(reference.uid)
        if known is not None:
            return known
        if reference.uid in jobs.gone_uids:
            return Owner.GONE
        try:
            job = self.client.get(JOB_RESOURCES[reference.kind], reference.name, namespace)
        except NotFound:
            jobs.gone_uids.add(reference.uid)
            return Owner.GONE
        except ApiError as exc:
            self._fail(f"get {reference.kind} {namespace}/{reference.name}", exc, namespace)
            return Owner.UNKNOWN
        state = JobState.from_job({"kind": reference.kind, **job})
        if state.uid != reference.uid:  # the name now belongs to a newer job
            jobs.gone_uids.add(reference.uid)
            return Owner.GONE
        jobs.add(state)
        return state

    def _owner_by_label(self, namespace: str, job_name: str, jobs: JobIndex) -> Owner:
        """An ownerless child (its job was deleted with propagation Orphan): gone only if no job of any
        kind has the labelled name; if one has, that job does not control the child, so it stays."""
        if jobs.unavailable or not job_name:
            return Owner.UNKNOWN
        if (namespace, job_name) in jobs.gone_names:
            return Owner.GONE
        if any((kind, namespace, job_name) in jobs.names for kind in JOB_RESOURCES):
            return Owner.NOT_CONTROLLED
        for kind, rtype in JOB_RESOURCES.items():
            try:
                jobs.add(JobState.from_job({"kind": kind, **self.client.get(rtype, job_name, namespace)}))
            except NotFound:
                continue
            except ApiError as exc:
                self._fail(f"get {kind} {namespace}/{job_name}", exc, namespace)
                return Owner.UNKNOWN
            return Owner.NOT_CONTROLLED
        jobs.gone_names.add((namespace, job_name))
        return Owner.GONE

    # -- one object ----------------------------------------------------------------------------------

    def handle(self, rtype: ResourceType, obj: fields.RawDict, verdict: Verdict) -> None:
        self.tally.scanned += 1
        if not verdict.delete:
            self.tally.skipped += 1
            self.tally.skip_reasons[verdict.reason.value] += 1
            return
        meta = metadata(obj)
        name, namespace, uid = str(meta.get("name") or ""), namespace_of(obj), str(meta.get("uid") or "")
        already_gone = False
        if not self.run.dry_run:
            self.guard()
            try:
                self.client.delete(rtype, name, namespace, uid=uid)
            except (NotFound, Conflict):
                # 404: deleted meanwhile; 409: the uid precondition failed, the name has a newer object.
                already_gone = True
            except ApiError as exc:
                self._fail(f"delete {rtype.kind} {namespace}/{name}", exc, namespace)
                return
            if not already_gone:
                DELETIONS.labels(reason=verdict.reason.value).inc()
        self.tally.deleted += 1
        self._pending.append(
            GCDeletion(
                run=self.run,
                kind=rtype.kind,
                namespace=namespace,
                name=name,
                uid=uid,
                reason=verdict.reason.value,
                age_seconds=verdict.age_seconds,
                already_gone=already_gone,
            )
        )

    # -- bookkeeping ---------------------------------------------------------------------------------

    def _pages(
        self, rtype: ResourceType, label_selector: str | None = None, field_selector: str | None = None
    ) -> Iterator[list[fields.RawDict]]:
        """The items of every page; starts the list again if a continue token expires (410)."""
        restarts = 0
        while True:
            try:
                for page in self.client.list_pages(
                    rtype,
                    self.namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    page_size=settings.GC_PAGE_SIZE,
                ):
                    yield page.get("items") or []
                return
            except Gone:
                restarts += 1
                if restarts > MAX_LIST_RESTARTS:
                    raise
                logger.info("The list of %s expired mid-way; listing again from the start", rtype.plural)

    def _fail(self, what: str, exc: ApiError, namespace: str | None = None) -> None:
        """Record a failure with the namespace it concerns (the run's own for a listing, blank for a
        cluster-wide one): the dashboard shows each tenant only the failures in its namespaces."""
        logger.error("Garbage collection %s: %s failed: %s", self.run.pk, what, exc)
        self.tally.errors += 1
        if len(self.tally.failures) < MAX_RECORDED_FAILURES:
            self.tally.failures.append(
                {
                    "what": what,
                    "namespace": self.run.namespace if namespace is None else namespace,
                    "status": exc.status,
                    "error": str(exc)[:500],
                }
            )

    def flush(self) -> None:
        """Write the page's deletions and the run's counters (visible in the admin while it runs)."""
        if self._pending:
            GCDeletion.objects.bulk_create(self._pending)
            self._pending = []
        GCRun.objects.filter(pk=self.run.pk).update(**self.tally.as_fields())

    def _finish(self, status: str, note: str = "") -> None:
        self.flush()
        for name, value in self.tally.as_fields().items():
            setattr(self.run, name, value)
        self.run.status = status
        self.run.finished = timezone.now()
        self.run.note = note
        self.run.save()
        RUNS.labels(status=status).inc()
        logger.info(
            "Garbage collection %s %s: scanned %d, deleted %d, skipped %d, errors %d",
            self.run.pk,
            status,
            self.tally.scanned,
            self.tally.deleted,
            self.tally.skipped,
            self.tally.errors,
        )

    def _where(self) -> str:
        return f" in {self.namespace}" if self.namespace else ""
