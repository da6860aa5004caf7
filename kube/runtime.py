"""The watch side of the controllers: informers for every registered controller, their events turned into
reconcile keys on the queue, all of it running only while this process holds the Lease.

`ControllerManager` is what the worker bootstep and `manage.py run_controllers` start; `resync_all` is
what the periodic resync task calls. See docs/controllers.md.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from . import expectations
from .client import KubeClient, get_client
from .config import new_api_client, service_account_dir
from .controllers import Controller, Owns, registry
from .informer import Informer
from .leader import LeaderElector, LeaseConfig
from .mirror.writer import MirrorWriter, Pending
from .queue import ObjectKey
from .queue import enqueue as queue_enqueue
from .queue import losses as queue_losses
from .queue import registry as reconcilers
from .ratelimit import TokenBucket
from .resources import ResourceType

logger = logging.getLogger(__name__)

Enqueue = Callable[[str, str, str], object]
#: Of a kind: how many times this process found its queue data lost (kube.queue.losses).
QueueLosses = Callable[[str], int]

#: The child informers' index of objects by the reconcile keys of their owners.
OWNER_INDEX = "owner"
DEFAULT_LEASE_NAME = "argoml-controllers"


# -- which informers, and where their events go (pure) ----------------------------------------------------
@dataclass(frozen=True)
class WatchSpec:
    """What one informer watches. Controllers that read the same objects share one informer."""

    rtype: ResourceType
    namespace: str | None = None
    label_selector: str | None = None

    @classmethod
    def own(cls, controller: Controller) -> WatchSpec:
        """The informer of the controller's own kind."""
        return cls(controller.rtype, controller.namespace, controller.label_selector)


@dataclass(frozen=True)
class Route:
    """How an event from one informer reaches one controller: its own kind, or a child it owns."""

    controller: Controller
    child: Owns | None = None

    def keys(self, obj: dict[str, Any]) -> list[ObjectKey]:
        if self.child is None:
            return [self.controller.own_key(obj)]
        return self.controller.owner_keys(self.child, obj)


def plan_watches(controllers: Iterable[Controller]) -> dict[WatchSpec, list[Route]]:
    """The informers a set of controllers needs, each with the routes of its events."""
    plan: dict[WatchSpec, list[Route]] = {}
    for controller in controllers:
        plan.setdefault(WatchSpec.own(controller), []).append(Route(controller))
        for child in controller.owns:
            spec = WatchSpec(child.rtype, controller.namespace, child.label_selector)
            plan.setdefault(spec, []).append(Route(controller, child))
    return plan


def owner_index(routes: list[Route]) -> Callable[[dict[str, Any]], list[ObjectKey]]:
    """The index function of a child informer: a child is filed under the key of each owner it leads to."""
    child_routes = [route for route in routes if route.child is not None]

    def owners(obj: dict[str, Any]) -> list[ObjectKey]:
        return [key for route in child_routes for key in route.keys(obj)]

    return owners


def observed_items(route: Route, event_type: str, obj: dict[str, Any]) -> list[expectations.Item]:
    """What an event shows a reconcile of the route's controller that was waiting for it."""
    metadata = obj.get("metadata") or {}
    if route.child is None:
        resource_version = metadata.get("resourceVersion")
        return [expectations.version(resource_version)] if resource_version else []
    kind, name = route.child.rtype.kind, metadata.get("name") or ""
    if event_type == "DELETED" or metadata.get("deletionTimestamp"):
        return [expectations.deleted(kind, name), expectations.created(kind, name)]
    return [expectations.created(kind, name)]


# -- settings ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RuntimeConf:
    page_size: int = 500
    watch_timeout: int = 300
    silence_timeout: float = 120.0
    queue_check_interval: float = 1.0

    def __post_init__(self) -> None:
        if self.page_size < 1:
            raise ValueError(f"page_size: {self.page_size} must be at least 1.")
        if not self.queue_check_interval > 0:
            raise ValueError(
                f"queue_check_interval: {self.queue_check_interval} must be a positive number of seconds."
            )
        if self.watch_timeout < 1:
            raise ValueError(f"watch_timeout: {self.watch_timeout} must be at least 1 second.")
        if not self.silence_timeout > 0:
            raise ValueError(f"silence_timeout: {self.silence_timeout} must be a positive number of seconds.")


def _setting(name: str, default: Any) -> Any:
    value = getattr(settings, name, default)
    if isinstance(default, int | float) and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ImproperlyConfigured(f"{name}={value!r} must be a number.")
    return value


def runtime_conf_from_settings() -> RuntimeConf:
    try:
        return RuntimeConf(
            page_size=int(_setting("KUBE_INFORMER_PAGE_SIZE", 500)),
            watch_timeout=int(_setting("KUBE_WATCH_TIMEOUT_SECONDS", 300)),
            silence_timeout=float(_setting("KUBE_WATCH_SILENCE_TIMEOUT_SECONDS", 120.0)),
            queue_check_interval=float(_setting("KUBE_QUEUE_LOSS_CHECK_SECONDS", 1.0)),
        )
    except ValueError as error:
        raise ImproperlyConfigured(f"Informer settings: {error}") from error


def lease_config_from_settings(identity_prefix: str | None = None) -> LeaseConfig:
    """The Lease settings. The identity names the candidate in the Lease: `<prefix>_<pid>_<random>`, the
    prefix being the Celery node name (`worker@host`) in a worker and the host name elsewhere."""
    namespace = getattr(settings, "KUBE_LEADER_ELECTION_NAMESPACE", None) or _own_namespace()
    prefix = identity_prefix or socket.gethostname()
    try:
        return LeaseConfig(
            namespace=namespace,
            name=getattr(settings, "KUBE_LEADER_ELECTION_LEASE_NAME", DEFAULT_LEASE_NAME),
            identity=f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}",
            lease_duration=float(_setting("KUBE_LEADER_ELECTION_LEASE_DURATION_SECONDS", 15.0)),
            renew_deadline=float(_setting("KUBE_LEADER_ELECTION_RENEW_DEADLINE_SECONDS", 10.0)),
            retry_period=float(_setting("KUBE_LEADER_ELECTION_RETRY_PERIOD_SECONDS", 2.0)),
        )
    except ValueError as error:
        raise ImproperlyConfigured(f"Leader election settings: {error}") from error


def _own_namespace() -> str:
    """The pod's namespace in a cluster (its service account may write Leases there), else "default"."""
    try:
        return (service_account_dir() / "namespace").read_text().strip() or "default"
    except OSError:
        return "default"


# -- keys to the queue ------------------------------------------------------------------------------------
class KeySink:
    """Hands keys to the reconcile queue on a thread of its own, so a slow Redis never stalls a watch.

    Keys waiting here are deduplicated (the queue would drop the repeats anyway); a key the queue could
    not take, e.g. while Redis is down, stays and is retried: an event's key is never dropped.
    """

    def __init__(self, enqueue: Enqueue, *, retry_seconds: float = 1.0) -> None:
        self._enqueue = enqueue
        self._retry_seconds = retry_seconds
        self._waiting: dict[ObjectKey, None] = {}  # an ordered set: first come, first sent
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self.sent = 0

    def put(self, key: ObjectKey) -> None:
        with self._changed:
            if key not in self._waiting:
                self._waiting[key] = None
                self._changed.notify()

    def run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._stopping.is_set():
                    self._changed.wait()
                if self._stopping.is_set():
                    return
                batch, self._waiting = self._waiting, {}
            failed = self._send(batch)
            if failed:
                with self._changed:
                    self._waiting = {**failed, **self._waiting}
                # Not woken by new keys: while Redis is down, one attempt per retry period.
                if self._stopping.wait(self._retry_seconds):
                    return

    def _send(self, batch: dict[ObjectKey, None]) -> dict[ObjectKey, None]:
        """Enqueue the batch in order; returns the keys not enqueued (from the first failure on)."""
        keys = list(batch)
        for index, key in enumerate(keys):
            try:
                self._enqueue(key.kind, key.namespace, key.name)
            except Exception as error:
                logger.warning(
                    "could not enqueue %s (%s); keeping %d keys to retry", key, error, len(keys) - index
                )
                return dict.fromkeys(keys[index:])
            self.sent += 1
        return {}

    def stop(self) -> None:
        """Stop sending. Keys still waiting are dropped: the next leader's initial list enqueues every key."""
        self._stopping.set()
        with self._changed:
            self._changed.notify()

    @property
    def waiting(self) -> int:
        return len(self._waiting)


# -- the informers of all controllers ----------------------------------------------------------------------
class ControllerRuntime:
    """The informers of a set of controllers, wired to the reconcile queue. Started once, stopped once."""

    def __init__(
        self,
        client: KubeClient,
        controllers: Iterable[Controller],
        *,
        enqueue: Enqueue = queue_enqueue,
        conf: RuntimeConf | None = None,
        losses: QueueLosses | None = None,
    ) -> None:
        """`losses` counts the losses of the queue `enqueue` feeds: kube.queue's own by default; with
        another `enqueue` (a test's, a benchmark's) and no `losses`, nothing watches for a loss."""
        self.controllers = list(controllers)
        self.conf = conf or RuntimeConf()
        self.sink = KeySink(enqueue)
        self._losses = losses if losses is not None or enqueue is not queue_enqueue else queue_losses
        self.mirror_writer = MirrorWriter()
        self.expectations = expectations.Expectations()
        self.informers: dict[WatchSpec, Informer] = {}
        self._routes = plan_watches(self.controllers)
        for spec, routes in self._routes.items():
            has_children = any(route.child is not None for route in routes)
            self.informers[spec] = Informer(
                client,
                spec.rtype,
                self._handler(routes),
                namespace=spec.namespace,
                label_selector=spec.label_selector,
                page_size=self.conf.page_size,
                watch_timeout_seconds=self.conf.watch_timeout,
                silence_timeout_seconds=self.conf.silence_timeout,
                indexers={OWNER_INDEX: owner_index(routes)} if has_children else {},
                on_relist=self.expectations.clear,
            )
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    def _handler(self, routes: list[Route]) -> Callable[[str, dict[str, Any]], None]:
        def handle(event_type: str, obj: dict[str, Any]) -> None:
            for route in routes:
                keys = route.keys(obj)
                mirror = route.controller.mirror if route.child is None else route.child.mirror
                # A child is mirrored only by the controller it leads back to (one informer, many routes).
                if mirror is not None and keys:
                    self._mirror(route.controller, keys[0], mirror, event_type, obj)
                # Observed before the key is enqueued, so the run it triggers no longer waits for it.
                for key in keys:
                    if route.child is None and event_type == "DELETED":
                        self.expectations.drop(key)
                    elif not self._needs_run(route, key, event_type, obj):
                        continue
                    self.sink.put(key)

        return handle

    def _needs_run(self, route: Route, key: ObjectKey, event_type: str, obj: dict[str, Any]) -> bool:
        """Mark what the event shows the key's runs; False when it needs no run of its own: the key's own
        write of its object (that run decided already), or one of several children a run created while
        others are still on the way (the last one's event enqueues the key)."""
        items = observed_items(route, event_type, obj)
        if route.child is not None:
            # A child a run created enqueues once nothing else is pending, unless that run counted it.
            return not self.expectations.observe_awaited(key, items)
        if self.expectations.awaits_status(key):  # hashed only while one of its runs writes a status
            items.append(expectations.status_written(obj.get("status") or {}))
        own_write = False
        for item in items:
            own_write = self.expectations.observe(key, item) or own_write
        return self.expectations.take_held(key) or not own_write

    def _release_expired(self) -> None:
        """Hand back held keys whose awaited events never came, every EXPIRED_CHECK_SECONDS."""
        while not self._stopped.wait(expectations.EXPIRED_CHECK_SECONDS):
            for key in self.expectations.release_expired():
                logger.info("%s waited %.0f s for events of its writes that never came: reconciling it",
                            key, self.expectations.ttl)  # fmt: skip
                self.sink.put(key)

    def _watch_queue_data(self) -> None:
        """Enqueue every cached key of a kind again as soon as the queue's Redis data is found lost.

        Redis restarted empty, failed over to an empty replica or was flushed: the pending, running and
        waiting keys went with it, and nothing but this (or the resync, minutes later) would run them again.
        Looks every `queue_check_interval`; the queue's fence keeps the new runs from overlapping runs still
        in progress (docs/concurrency.md, "When Redis loses its data").
        """
        if self._losses is None:
            return
        seen: dict[str, int] = {}
        unreachable = False
        while True:
            for controller in self.controllers:
                kind = controller.kind
                try:
                    losses = self._losses(kind)
                except Exception as error:  # Redis unreachable: the sink keeps its keys meanwhile
                    if not unreachable:
                        logger.warning("cannot look at the reconcile queue of %s: %s", kind, error)
                    unreachable = True
                    continue
                unreachable = False
                if kind in seen and losses > seen[kind]:
                    keys = list(self.own_keys(controller))
                    logger.warning("the reconcile queue of %s lost its data in Redis: enqueueing its %d keys"
                                   " again", kind, len(keys))  # fmt: skip
                    for key in keys:
                        self.sink.put(key)
                seen[kind] = losses
            if self._stopped.wait(self.conf.queue_check_interval):
                return

    def _mirror(
        self, controller: Controller, key: ObjectKey, mirror: Callable[..., None], event_type: str, obj: Any
    ) -> None:
        """Queue the event for the mirror's writer thread: the watch goes on at once (see kube/mirror/)."""
        pending = Pending(mirror, event_type, obj, controller.kind.lower(), f"{key.namespace}/{key.name}")
        self.mirror_writer.put(pending)

    def start(self) -> None:
        if self._threads:
            raise RuntimeError("A ControllerRuntime starts once; build a new one to start again.")
        for target, name in (
            (self.sink.run, "controllers-enqueue"),
            (self.mirror_writer.run, "mirror-writer"),
            (self._release_expired, "expectations-expired"),
            (self._watch_queue_data, "queue-data-watch"),
        ):
            self._threads.append(threading.Thread(target=target, name=name, daemon=True))
        for spec, informer in self.informers.items():
            name = f"informer-{spec.rtype.plural}"
            self._threads.append(threading.Thread(target=informer.run, name=name, daemon=True))
        for thread in self._threads:
            thread.start()
        logger.info("controllers started: %s", ", ".join(c.kind for c in self.controllers) or "none")

    def stop(self) -> None:
        """Stop every informer now; no event is handled and no key is enqueued after this returns."""
        self._stopped.set()
        for informer in self.informers.values():
            informer.stop()
        self.sink.stop()
        self.mirror_writer.stop()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def wait_synced(self, timeout: float) -> bool:
        """True once every informer has listed; False on timeout."""
        return all(informer.synced.wait(timeout) for informer in self.informers.values())

    @property
    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers.values())

    def view(self, kind: str) -> CachedView | None:
        """The cached objects of the controller of `kind` and its children (None: no such controller)."""
        for controller in self.controllers:
            if controller.kind == kind:
                children = {
                    child.rtype.kind: self.informers[
                        WatchSpec(child.rtype, controller.namespace, child.label_selector)
                    ]
                    for child in controller.owns
                }
                own = self.informers[WatchSpec.own(controller)]
                return CachedView(controller, own, children, self.expectations, self.sink.put)
        return None

    def known_keys(self) -> Iterator[ObjectKey]:
        """Every cached object of every controller's own kind, as reconcile keys."""
        for controller in self.controllers:
            yield from self.own_keys(controller)

    def own_keys(self, controller: Controller) -> Iterator[ObjectKey]:
        """Every cached object of the controller's own kind, as reconcile keys."""
        informer = self.informers[WatchSpec.own(controller)]
        for namespace, name in informer.cached_keys():
            yield ObjectKey(controller.kind, namespace, name)


@dataclass(frozen=True)
class CachedView:
    """One controller's objects and children as the leader's informers hold them, and what its reconciles
    wait to observe there. Objects are shared with the cache: read them, never change them."""

    controller: Controller
    own: Informer
    children_informers: dict[str, Informer]
    expected: expectations.Expectations
    #: Enqueues a key (the runtime's sink): for a held key the run's own `observe` frees.
    release: Callable[[ObjectKey], None]

    def key(self, namespace: str, name: str) -> ObjectKey:
        return ObjectKey(self.controller.kind, namespace, name)

    @property
    def synced(self) -> bool:
        informers = [self.own, *self.children_informers.values()]
        return all(informer.synced.is_set() for informer in informers)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.own.get(namespace, name)

    def children(self, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
        """The cached children of one kind that lead back to the object (by their ownerReference or label)."""
        return self.children_informers[kind].by_index(OWNER_INDEX, self.key(namespace, name))

    def lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A cached object of a watched child kind by its key, whoever owns it: a controller that watches
        a kind only to read it (a TrainJob's runtime) finds it here ("" is a cluster-scoped namespace)."""
        informer = self.children_informers.get(kind)
        return informer.get(namespace, name) if informer is not None else None

    def waiting(self, namespace: str, name: str) -> float | None:
        """None when the cache shows every write of the key's earlier runs; else seconds to wait at most."""
        return self.expected.waiting(self.key(namespace, name))

    def expect(self, namespace: str, name: str, items: Iterable[expectations.Item]) -> None:
        self.expected.expect(self.key(namespace, name), items)

    def count(self, namespace: str, name: str, items: Iterable[expectations.Item]) -> None:
        """The run counted the children of these items (it created them) in the status it wrote."""
        self.expected.count(self.key(namespace, name), items)

    def observe(self, namespace: str, name: str, item: expectations.Item) -> None:
        """An item that will never come (its write failed, or found the object there): when it was the last
        one a held key waited for, no event will enqueue that key, so this does."""
        key = self.key(namespace, name)
        if self.expected.observe(key, item) and self.expected.take_held(key):
            self.release(key)

    def expect_status(self, namespace: str, name: str, status: dict[str, Any]) -> expectations.Item:
        """Expect the event of a status write about to be sent (observe the item returned if it fails)."""
        item = expectations.status_written(status)
        self.expected.expect(self.key(namespace, name), [item])
        return item

    def expect_version(
        self, namespace: str, name: str, resource_version: str, *, instead_of: expectations.Item | None = None
    ) -> None:
        """Wait for the event of our own write of the object; its event may have arrived already. A status
        write's `expect_status` item goes (`instead_of`): from its answer on, the version says it all, and a
        status the server stored otherwise than sent is never left waiting."""
        key = self.key(namespace, name)
        self.expected.expect(key, [expectations.version(resource_version)], instead_of=instead_of)
        cached = self.own.get(namespace, name)
        if cached is not None and (cached.get("metadata") or {}).get("resourceVersion") == resource_version:
            self.expected.observe(key, expectations.version(resource_version))


# -- leading ---------------------------------------------------------------------------------------------
class ControllerManager:
    """Runs a ControllerRuntime while this process holds the Lease, a fresh one each time it leads."""

    def __init__(
        self,
        *,
        client: KubeClient,
        election_client: KubeClient,
        controllers: Iterable[Controller],
        lease: LeaseConfig,
        conf: RuntimeConf | None = None,
        enqueue: Enqueue = queue_enqueue,
        losses: QueueLosses | None = None,
    ) -> None:
        self.client = client
        self.controllers = list(controllers)
        self.conf = conf or RuntimeConf()
        self._enqueue = enqueue
        self._losses = losses
        self.runtime: ControllerRuntime | None = None
        self.elector = LeaderElector(election_client, lease, self._on_started, self._on_stopped)
        self._thread: threading.Thread | None = None
        self.pid = os.getpid()  # a process forked from this one has a copy of the caches, never updated

    def _on_started(self) -> None:
        runtime = ControllerRuntime(
            self.client, self.controllers, enqueue=self._enqueue, conf=self.conf, losses=self._losses
        )
        self.runtime = runtime
        runtime.start()

    def _on_stopped(self) -> None:
        runtime, self.runtime = self.runtime, None
        if runtime is not None:
            runtime.stop()

    def start(self) -> None:
        global _active_manager
        self._thread = threading.Thread(target=self.elector.run, name="leader-election", daemon=True)
        self._thread.start()
        _active_manager = self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop leading (the informers stop at once), release the Lease, and wait for that."""
        global _active_manager
        self.elector.stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if _active_manager is self:
            _active_manager = None

    def run_forever(self, stop: threading.Event) -> None:
        """The foreground form (run_controllers): run until `stop` is set."""
        self.start()
        stop.wait()
        self.stop()

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader


_active_manager: ControllerManager | None = None


def leading_runtime() -> ControllerRuntime | None:
    """The synced runtime of this process, if it leads (the threads/solo pool and run_controllers)."""
    manager = _active_manager
    runtime = manager.runtime if manager is not None else None
    return runtime if runtime is not None and runtime.synced and not runtime.stopped else None


def cached_view(kind: str) -> CachedView | None:
    """The informer cache of `kind` when this process leads and has listed it and its children (reconciles
    then read no API); None elsewhere (a prefork pool child, a replica that does not lead), where
    reconciles read the API. Only this controller's informers count: another's that cannot list (its CRD
    not installed) does not send this one to the API."""
    manager = _active_manager
    runtime = manager.runtime if manager is not None and manager.pid == os.getpid() else None
    if runtime is None or runtime.stopped:
        return None
    view = runtime.view(kind)
    return view if view is not None and view.synced else None


def check_reconcilers(controllers: Iterable[Controller]) -> None:
    """Refuse to watch a kind nobody reconciles: its keys would fail on every worker."""
    known = set(reconcilers.kinds())
    missing = sorted(controller.kind for controller in controllers if controller.kind not in known)
    if missing:
        raise ImproperlyConfigured(
            f"Controllers without a reconciler: {', '.join(missing)}. Declare one with @reconciler(kind) "
            "in the app's reconcile.py."
        )


def election_client(lease: LeaseConfig) -> KubeClient:
    """A client of its own for the Lease: reconcile writes never hold a renewal up in the rate limiter, a
    call never waits longer than the retry period for an answer, and a failed call is not retried (the
    elector's next attempt is the retry)."""
    return KubeClient(
        new_api_client(),
        write_limiter=TokenBucket(qps=10.0, burst=10),
        request_timeout=lease.retry_period,
        max_attempts=1,
    )


def manager_from_settings(identity_prefix: str | None = None) -> ControllerManager:
    controllers = registry.controllers()
    check_reconcilers(controllers)
    lease = lease_config_from_settings(identity_prefix)
    return ControllerManager(
        client=get_client(),
        election_client=election_client(lease),
        controllers=controllers,
        lease=lease,
        conf=runtime_conf_from_settings(),
    )


# -- resync ----------------------------------------------------------------------------------------------
def listed_keys(client: KubeClient, controllers: Iterable[Controller], page_size: int) -> Iterator[ObjectKey]:
    for controller in controllers:
        for page in client.list_pages(
            controller.rtype,
            controller.namespace,
            label_selector=controller.label_selector,
            page_size=page_size,
        ):
            for item in page.get("items") or ():
                yield controller.own_key(item)


def resync_all(enqueue: Enqueue = queue_enqueue) -> int:
    """Enqueue every known key of every controller, so a missed event heals. Returns how many.

    Reads the informer caches when this process leads; otherwise (a prefork pool child) lists the objects.
    """
    runtime = leading_runtime()
    if runtime is not None:
        keys: Iterable[ObjectKey] = runtime.known_keys()
    else:
        keys = listed_keys(get_client(), registry.controllers(), runtime_conf_from_settings().page_size)
    count = 0
    for key in keys:
        enqueue(key.kind, key.namespace, key.name)
        count += 1
    return count
