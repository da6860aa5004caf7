"""The store's state and its single commit path: objects, indexes, resourceVersion, event fan-out."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesim.builtins import builtin_types
from kubesim.clock import Clock
from kubesim.errors import ApiError
from kubesim.identity import User
from kubesim.resources import Registry, ResourceType
from kubesim.store.events import DELETED, Dispatcher, EventLog, Watcher, WatchEvent

ObjectKey = tuple[str, str, str]  # (resource key, namespace, name)


@dataclass
class AdmissionRequest:
    """What an admission hook sees before a write is committed (see docs/kubesim.md)."""

    operation: str  # CREATE, UPDATE or DELETE
    resource: ResourceType
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    subresource: str = ""
    dry_run: bool = False
    user_agent: str = ""
    #: what the client gets back as `Warning` headers (a hook appends; the write's own list)
    warnings: list[str] = field(default_factory=list)
    #: who asks (None: the simulator itself, or a simulator without authentication)
    user: User | None = None


AdmissionHook = Callable[[AdmissionRequest], "dict[str, Any] | None"]


@dataclass
class WriteOptions:
    """Per-request options of a write; `warnings` collects what the server returns as Warning headers."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"  # Ignore, Warn or Strict, as the fieldValidation query parameter
    force: bool = False
    version: str = ""
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)
    user: User | None = None  # the authenticated requester, for admission (None: the simulator itself)
    #: keys the request body gave twice (the HTTP layer notes them while decoding JSON)
    duplicate_fields: list[str] = field(default_factory=list)
    #: a simulated controller's own write (`mutate`): not decoded against the kind's schema again
    trusted: bool = False


class StoreBase:
    """Shared state guarded by one re-entrant lock; every change goes through `_commit`."""

    def __init__(
        self, clock: Clock | None = None, *, event_log_size: int = 10_000, continue_ttl: float = 300.0
    ) -> None:
        self.lock = threading.RLock()
        self.clock = clock or Clock()
        self.registry = Registry(builtin_types())
        self.continue_ttl = continue_ttl
        self._objects: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._order: dict[str, dict[str | None, list[tuple[str, str]]]] = {}
        self._by_uid: dict[str, ObjectKey] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}
        self._rv = 0
        self._log = EventLog(event_log_size)
        self._watchers: dict[str, set[Watcher]] = {}
        self._dispatcher = Dispatcher()
        self._mutating: list[AdmissionHook] = []
        #: resource keys deleted gracefully while bound to a node (a simulated kubelet adds "pods")
        self.graceful_deletion: set[str] = set()
        self._admission: list[AdmissionHook] = []

    # --- resolution ---------------------------------------------------------------------------------

    def resource(self, name: str | ResourceType, api_version: str | None = None) -> ResourceType:
        """A ResourceType from a kubectl-style name (`pods`, `deploy`, `tfjobs.argoml.io`, `Pod`). A view
        (core v1 Events) resolves to the resource that keeps its objects: this Python API reads and writes
        them in the stored shape (events.k8s.io/v1), where HTTP requests through both APIs find them."""
        return self._stored(self._registered(name, api_version))

    def _registered(self, name: str | ResourceType, api_version: str | None = None) -> ResourceType:
        if isinstance(name, ResourceType):
            return name
        try:
            return self.registry.resolve(name, api_version)
        except LookupError:
            raise ApiError(404, "NotFound", f"the server doesn't have a resource type {name!r}") from None

    def _stored(self, resource: ResourceType) -> ResourceType:
        if resource.view is None:
            return resource
        stored = self.registry.by_key(resource.view.stored_as)
        assert stored is not None, (
            f"{resource.key} is a view of {resource.view.stored_as}, which is not served"
        )
        return stored

    def storage_of(
        self, obj: dict[str, Any], resource: str | ResourceType | None = None
    ) -> tuple[ResourceType, dict[str, Any]]:
        """The resource that keeps `obj`, and `obj` in its stored shape: a core v1 Event is kept as the
        events.k8s.io/v1 Event a real API server stores, as if it had been created over HTTP."""
        registered = self._registered(resource) if resource is not None else self.resource_for(obj)
        if registered.view is None:
            return registered, obj
        return self._stored(registered), registered.view.from_view(obj)

    def resource_for(self, obj: dict[str, Any]) -> ResourceType:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        found = self.registry.for_kind(api_version, kind)
        if found is None:
            raise ApiError(404, "NotFound", f'no matches for kind "{kind}" in version "{api_version}"')
        return found

    @property
    def resource_version(self) -> str:
        with self.lock:
            return str(self._rv)

    # --- reads of the live state (callers hold the lock or accept a racy snapshot) -------------------

    def _snapshot(self, resource: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(resource.key, {}).get(namespace, {}).get(name)

    def _by_key(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._objects.get(key[0], {}).get(key[1], {}).get(key[2])

    def _ordered_keys(self, resource: ResourceType, namespace: str | None) -> list[tuple[str, str]]:
        """(namespace, name) pairs in the apiserver's list order, cached until the set of names changes."""
        cache = self._order.setdefault(resource.key, {})
        if namespace not in cache:
            buckets = self._objects.get(resource.key, {})
            if namespace is None:
                cache[None] = sorted((ns, n) for ns, names in buckets.items() for n in names)
            else:
                cache[namespace] = sorted((namespace, n) for n in buckets.get(namespace, {}))
        return cache[namespace]

    def _count(self, namespace: str) -> int:
        """How many namespaced objects live in `namespace` (across every resource type)."""
        return sum(len(buckets.get(namespace, {})) for buckets in self._objects.values())

    # --- the commit path ---------------------------------------------------------------------------

    def _commit(
        self, resource: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Store (or remove) `obj` with a new resourceVersion and fan the event out. Caller holds the lock."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        metadata = obj["metadata"]
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        key = (resource.key, namespace, name)
        buckets = self._objects.setdefault(resource.key, {})
        if event_type == DELETED:
            buckets.get(namespace, {}).pop(name, None)
            self._by_uid.pop(metadata.get("uid", ""), None)
            self._order.pop(resource.key, None)
        else:
            bucket = buckets.setdefault(namespace, {})
            if name not in bucket:
                self._order.pop(resource.key, None)
            bucket[name] = obj
            self._by_uid[metadata["uid"]] = key
        self._reindex_owners(key, old, None if event_type == DELETED else obj)
        event = WatchEvent(event_type, obj, old, resource, self._rv)
        self._log.append(event)
        for watcher in list(self._watchers.get(resource.key, ())):
            watcher.offer(event)
        self._dispatcher.publish(event)
        return obj

    def _reindex_owners(self, key: ObjectKey, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        for ref in (old or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents.get(ref.get("uid", ""), set()).discard(key)
        for ref in (new or {}).get("metadata", {}).get("ownerReferences") or []:
            self._dependents.setdefault(ref.get("uid", ""), set()).add(key)

    def _register_watcher(self, watcher: Watcher) -> None:
        self._watchers.setdefault(watcher.resource.key, set()).add(watcher)
        watcher._on_close = self._unregister_watcher

    def _unregister_watcher(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.get(watcher.resource.key, set()).discard(watcher)
