"""How an operator writes what its reconcile decided: its children, its status, the events about both.

The mechanics every operator shares (`jobs`, `trainer`, next Katib's trial runner); the conventions (which
children, their names and env, the order of a Plan's steps around these) stay with each operator.

- `ChildWriter` deletes, updates and creates children, each step's calls at once (`in_parallel`), kinds
  created in the operator's order. Deletions carry the uid they are meant for; 404 and 409 are success
  (gone already, or the name now a newer object's), as is 409 on create (a previous run made it). Any
  other error becomes a `Failed<Verb><Kind>` Warning event and is raised once the rest was tried, so the
  queue retries the key. With a cache `view`, each write is expected before it is sent, so the next run
  waits until the cache shows it; a write that fails or finds the object there is no longer expected.
- `write_status` replaces the status subresource with the object's resourceVersion as the precondition.
- `write_pod_group` creates, updates or deletes an operator's PodGroup and says what came of it: a write
  the cluster refuses for good (404: its CRD missing; 403: RBAC) is a Warning event saying what to fix
  (`refused_pod_group_event`), not an error to retry at once.
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from kube.client import KubeClient
from kube.errors import ApiError, Conflict, Forbidden, NotFound
from kube.events import EventRecorder
from kube.logging import runtime_logger
from kube.resources import ResourceType

from . import expectations
from .cachedview import CachedView

logger = runtime_logger(__name__)
T = TypeVar("T")

#: Never requeue sooner than this: a deadline or TTL that is due now is handled by the next run anyway.
MIN_REQUEUE_SECONDS = 0.5
#: A PodGroup the cluster refused (its CRD missing, RBAC): look again this much later, pods held back (a
#: gang scheduler would otherwise see them without their group).
POD_GROUP_RETRY_SECONDS = 30.0


def requeue_after(seconds: float | None, *, pod_group_refused: bool = False) -> float | None:
    """What a reconcile returns to the queue: None (no deadline) or at least MIN_REQUEUE_SECONDS, and at
    most POD_GROUP_RETRY_SECONDS while a PodGroup is refused."""
    if pod_group_refused:
        seconds = POD_GROUP_RETRY_SECONDS if seconds is None else min(seconds, POD_GROUP_RETRY_SECONDS)
    return None if seconds is None else max(seconds, MIN_REQUEUE_SECONDS)


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record on the owner."""

    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True)
class Deletion:
    """A child to delete, by name and uid (delete with a uid precondition: never hit its successor)."""

    kind: str
    name: str
    uid: str
    reason: str  # why, in the operator's words (Recreate, ScaleDown, Suspend, Stop, ...)
    message: str


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def creation_event(manifest: Mapping[str, Any]) -> Event:
    kind = str(manifest.get("kind"))
    return Event("Normal", f"SuccessfulCreate{kind}", f"Created {kind.lower()}: {name_of(manifest)}")


def deletion_event(deletion: Deletion) -> Event:
    kind = deletion.kind
    return Event(
        "Normal", f"SuccessfulDelete{kind}", f"Deleted {kind.lower()}: {deletion.name} ({deletion.message})"
    )


def creation_events(manifests: Sequence[Mapping[str, Any]]) -> list[Event]:
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


def deletion_events(deletions: Sequence[Deletion]) -> list[Event]:
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


@dataclass(frozen=True)
class ChildKinds:
    """An operator's children: the resource type of each kind it creates, deletes and updates (each one a
    grant in its RBAC: deploy/tests/test_rbac.py reads these), the order kinds are created in (what pods
    mount, then what names them, then the pods), and the kinds no informer watches (created, never read
    back: no event of theirs to expect)."""

    created: Mapping[str, ResourceType]
    creation_order: tuple[str, ...]
    deleted: Mapping[str, ResourceType]
    updated: Mapping[str, ResourceType] = field(default_factory=dict)
    unwatched: tuple[str, ...] = ()


@dataclass
class ChildWriter:
    """One run's writes of one owner's children. Call `delete`, `update`, `create` in the order the
    operator's plan says, then `finish`: it records the events gathered (and `extra`, the plan's own) and
    raises the first error other than 404/409."""

    client: KubeClient
    owner: dict[str, Any]
    kinds: ChildKinds
    recorder: EventRecorder
    view: CachedView | None = None
    events: list[tuple[Event, str]] = field(default_factory=list)
    failures: list[ApiError] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return str((self.owner.get("metadata") or {}).get("namespace") or "")

    def failed(self, error: ApiError, reason: str, action: str) -> None:
        """A write that failed: a Warning event now, the error raised by `finish`."""
        self.failures.append(error)
        self.events.append((Event("Warning", reason, str(error)), action))

    def delete(self, deletions: Sequence[Deletion]) -> list[Deletion]:
        """Delete each child (uid precondition); the deletions done, their events gathered."""
        self._expect([expectations.deleted(d.kind, d.name) for d in deletions])
        results = in_parallel([functools.partial(self._delete, d) for d in deletions])
        deleted = []
        for deletion, future in zip(deletions, results, strict=True):
            error = future.result()
            if error is None:
                deleted.append(deletion)
                continue
            self._not_coming(expectations.deleted(deletion.kind, deletion.name))
            self.failed(error, f"FailedDelete{deletion.kind}", "Delete")
        self.events += [(event, "Delete") for event in deletion_events(deleted)]
        return deleted

    def update(self, manifests: Sequence[dict[str, Any]]) -> None:
        """Replace each child (its resourceVersion the precondition; 404/409: the next run decides again)."""
        results = in_parallel([functools.partial(self._update, m) for m in manifests])
        for manifest, future in zip(manifests, results, strict=True):
            error = future.result()
            if error is not None:
                self.failed(error, f"FailedUpdate{manifest.get('kind')}", "Update")

    def create(self, manifests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Create the children kind by kind in the creation order (a kind outside it is not created); the
        children created, as the API returned them. Every creation is expected before the first is sent:
        the event of the last of one kind must not enqueue a run that finds the next kind not expected."""
        order, unwatched = self.kinds.creation_order, self.kinds.unwatched
        watched = [m for m in manifests if m.get("kind") in order and m.get("kind") not in unwatched]
        self._expect([expectations.created(str(m.get("kind")), name_of(m)) for m in watched])
        made: list[dict[str, Any]] = []
        for kind in order:
            of_kind = [m for m in manifests if m.get("kind") == kind]
            results = in_parallel([functools.partial(self._create, m) for m in of_kind])
            created = []
            for manifest, future in zip(of_kind, results, strict=True):
                outcome = future.result()
                if isinstance(outcome, dict):
                    created.append(manifest)
                    made.append(outcome)
                    continue
                if kind not in unwatched:
                    self._not_coming(expectations.created(kind, name_of(manifest)))
                if isinstance(outcome, ApiError):
                    self.failed(outcome, f"FailedCreate{kind}", "Create")
            self.events += [(event, "Create") for event in creation_events(created)]
        return made

    def finish(self, extra: Iterable[tuple[Event, str]] = ()) -> None:
        """Record the events gathered, then `extra`, all at once; raise the first failure."""
        events = [*self.events, *extra]
        in_parallel([functools.partial(record, self.recorder, self.owner, e, a) for e, a in events])
        if self.failures:
            raise self.failures[0]

    def _delete(self, deletion: Deletion) -> ApiError | None:
        try:
            self.client.delete(
                self.kinds.deleted[deletion.kind], deletion.name, self.namespace, uid=deletion.uid
            )
        except (NotFound, Conflict):
            return None
        except ApiError as error:
            logger.warning("could not delete %s %s: %s", deletion.kind, deletion.name, error)
            return error
        return None

    def _update(self, manifest: dict[str, Any]) -> ApiError | None:
        try:
            self.client.replace(self.kinds.updated[str(manifest["kind"])], manifest)
        except (NotFound, Conflict):
            return None
        except ApiError as error:
            logger.warning("could not update %s %s: %s", manifest["kind"], name_of(manifest), error)
            return error
        return None

    def _create(self, manifest: dict[str, Any]) -> dict[str, Any] | ApiError | None:
        """The child as created, None when it existed (409), or the error."""
        try:
            return self.client.create(self.kinds.created[str(manifest["kind"])], manifest, self.namespace)
        except Conflict:
            return None
        except ApiError as error:
            logger.warning("could not create %s %s: %s", manifest["kind"], name_of(manifest), error)
            return error

    def _expect(self, items: list[expectations.Item]) -> None:
        if self.view is not None and items:
            self.view.expect(self.namespace, name_of(self.owner), items)

    def _not_coming(self, item: expectations.Item) -> None:
        if self.view is not None:
            self.view.observe(self.namespace, name_of(self.owner), item)


def record(recorder: EventRecorder, owner: dict[str, Any], event: Event, action: str) -> None:
    recorder.event(owner, event.type, event.reason, event.message, action=action)


def record_all(recorder: EventRecorder, owner: dict[str, Any], events: Iterable[Event], action: str) -> None:
    """Record events on the owner, all at once."""
    in_parallel([functools.partial(record, recorder, owner, e, action) for e in events])


def write_status(
    client: KubeClient,
    rtype: ResourceType,
    obj: dict[str, Any],
    status: dict[str, Any],
    view: CachedView | None,
) -> dict[str, Any]:
    """Replace the status (not merge: a field the plan dropped must go) and return the object written.
    Its resourceVersion is the precondition: an object changed since read gives Conflict, and the retry
    decides again from what it is now. With a `view`, its event is expected (the next run waits for the
    cache to show it, and the event itself enqueues no run)."""
    metadata = obj.get("metadata") or {}
    namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
    expected = view.expect_status(namespace, name, status) if view is not None else None
    try:
        written = client.replace(rtype, {**obj, "status": status}, subresource="status")
    except ApiError:
        if view is not None and expected is not None:
            view.observe(namespace, name, expected)  # no event will come
        raise
    if view is not None:
        resource_version = str((written.get("metadata") or {}).get("resourceVersion") or "")
        view.expect_version(namespace, name, resource_version, instead_of=expected)
    return written


@dataclass(frozen=True)
class PodGroupWording:
    """How an operator words a PodGroup write the cluster refused: `doing` (writing, creating), `actor`
    (the operator, the controller), what to install when the resource is missing, what to grant on 403."""

    doing: str
    actor: str
    missing: str
    forbidden: str


def refused_pod_group_event(
    error: NotFound | Forbidden, rtype: ResourceType, verb: str, name: str, wording: PodGroupWording
) -> Event:
    """The Warning of a PodGroup write the cluster refuses for good (`verb`: Create, Update, Delete): 404,
    it has no such resource (its CRD is missing); 403, RBAC. Retrying at once fixes neither."""
    where = f"{rtype.plural}.{rtype.group}"
    if isinstance(error, NotFound):
        detail = f"the cluster has no {where}; {wording.missing}"
    else:
        detail = f"the {wording.actor} may not {verb.lower()} {where} ({error}); {wording.forbidden}"
    return Event("Warning", f"Failed{verb}PodGroup", f"Error {wording.doing} PodGroup {name}: {detail}")


@dataclass(frozen=True)
class PodGroupWritten:
    """What a PodGroup write came to: the event to record on its owner (None: nothing to say), whether the
    cluster refused it for good (no pod may be created then), and whether it answered 409 (create: it
    exists; update: it changed since read; delete: not the object read)."""

    event: Event | None = None
    refused: bool = False
    conflict: bool = False


def write_pod_group(
    client: KubeClient, rtype: ResourceType, verb: str, manifest: dict[str, Any], wording: PodGroupWording
) -> PodGroupWritten:
    """`verb` (Create, Update: replace with its resourceVersion, Delete: with its uid) the PodGroup
    `manifest`. 404 on delete is success (gone already); 404 otherwise and 403 are refusals, a Warning that
    says what to fix; other errors are raised, for the queue to retry."""
    metadata = manifest["metadata"]
    name, namespace = metadata["name"], metadata.get("namespace")
    try:
        if verb == "Create":
            client.create(rtype, manifest, namespace)
        elif verb == "Update":
            client.replace(rtype, manifest)
        else:
            client.delete(rtype, name, namespace, uid=str(metadata.get("uid") or ""))
    except Conflict:
        return PodGroupWritten(conflict=True)
    except (NotFound, Forbidden) as refused:
        if isinstance(refused, NotFound) and verb == "Delete":
            return PodGroupWritten()
        return PodGroupWritten(refused_pod_group_event(refused, rtype, verb, name, wording), refused=True)
    return PodGroupWritten(Event("Normal", f"Successful{verb}PodGroup", f"{verb}d PodGroup: {name}"))


def list_all(client: KubeClient, rtype: ResourceType, namespace: str, selector: str) -> list[dict[str, Any]]:
    """Every object of a type matching `selector`, all pages."""
    items: list[dict[str, Any]] = []
    for page in client.list_pages(rtype, namespace, label_selector=selector):
        items += page.get("items") or []
    return items


def parallel_calls() -> int:
    """JOBS_RECONCILE_PARALLEL_CALLS: how many API calls one reconcile of any operator makes at once
    (default 8: a job's children of one kind are usually created in a single round)."""
    value = getattr(settings, "JOBS_RECONCILE_PARALLEL_CALLS", 8)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(f"JOBS_RECONCILE_PARALLEL_CALLS={value!r} must be a whole number >= 1.")
    return value


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
            max_workers=parallel_calls(), thread_name_prefix="reconcile-calls"
        )
    return executor
