"""The watch side of the controllers: informers for every registered controller, their events turned into
reconcile keys on the queue, all of it running only while this process holds the Lease.

`ControllerManager` is what the worker bootstep and `manage.py run_controllers` start; `resync_all` is
what the periodic resync task calls. See docs/controllers.md.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from kube.client import KubeClient, get_client
from kube.config import new_api_client
from kube.logging import runtime_logger
from kube.ratelimit import TokenBucket
from kube.resources import ResourceType

from . import expectations
from .cachedview import OWNER_INDEX, CachedView
from .conf import RuntimeConf, lease_config_from_settings, runtime_conf_from_settings
from .informer import Informer
from .keysink import Enqueue, KeySink
from .leader import LeaderElector, LeaseConfig
from .mirror.writer import MirrorWriter, Pending
from .queue import ObjectKey
from .queue import enqueue as queue_enqueue
from .queue import losses as queue_losses
from .queue import registry as reconcilers
from .registry import Controller, Owns, registry

logger = runtime_logger(__name__)

#: Of a kind: how many times this process found its queue data lost (kube.controller.queue.losses).
QueueLosses = Callable[[str], int]


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
        """`losses` counts the losses of the queue `enqueue` feeds: kube.controller.queue's own by default;
        with another `enqueue` (a test's, a benchmark's) and no `losses`, nothing watches for a loss."""
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
        """Queue the event for the mirror's writer thread: the watch goes on at once (see mirror/)."""
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
            f"Controllers without a reconciler: {', '.join(missing)}. Register each with its reconcile "
            "function: kube.controller.registry.register(rtype, reconcile, ...) in the app's controllers.py."
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
