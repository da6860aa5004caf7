"""The simulator's object store, usable directly from Python and by the HTTP server.

`Store` = state and commit path (base) + reads + writes + deletion. See docs/kubesim.md for the API.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.jsonutil import clone
from kubesim.store.base import AdmissionHook, AdmissionRequest, WriteOptions
from kubesim.store.deletion import BACKGROUND, FOREGROUND, ORPHAN, DeletionMixin
from kubesim.store.events import (
    ADDED,
    BOOKMARK,
    DELETED,
    ERROR,
    MODIFIED,
    Callback,
    Subscription,
    Subscriptions,
    Watcher,
    WatchEvent,
)
from kubesim.store.persistence import PersistenceMixin
from kubesim.store.reads import Page, ReadsMixin
from kubesim.store.writes import WritesMixin

__all__ = [
    "ADDED",
    "BACKGROUND",
    "BOOKMARK",
    "DELETED",
    "ERROR",
    "FOREGROUND",
    "MODIFIED",
    "ORPHAN",
    "AdmissionHook",
    "AdmissionRequest",
    "Page",
    "Store",
    "Subscription",
    "Subscriptions",
    "WatchEvent",
    "Watcher",
    "WriteOptions",
]


class Store(ReadsMixin, WritesMixin, DeletionMixin, PersistenceMixin):
    """Thread-safe Kubernetes object store with watch, admission hooks and subscribers."""

    def subscribe(
        self, callback: Callable[[str, dict[str, Any]], None], resource: str | None = None
    ) -> Subscription:
        """Call `callback(event_type, object_copy)` after every committed change (optionally of one
        resource), in commit order, on a background thread, outside the store lock."""
        key = self.resource(resource).key if resource else None
        return self._dispatcher.subscribe(callback, key)

    def list_then_watch(self, *handlers: tuple[str, Callback]) -> Subscriptions:
        """Subscribe each handler to its resource, then hand the first resource's objects to its handler as
        ADDED: an informer's start, so a controller started late still acts on what was there before it."""
        subscriptions = Subscriptions([self.subscribe(callback, resource) for resource, callback in handlers])
        resource, callback = handlers[0]
        for obj in self.list(resource)["items"]:
            callback(ADDED, obj)
        return subscriptions

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until subscribers have handled every committed event (and the events those caused)."""
        return self._dispatcher.wait_idle(timeout)

    def ensure_namespace(self, name: str) -> dict[str, Any]:
        """Create a namespace unless it exists (test set-up convenience)."""
        with self.lock:
            found = self._objects.get("namespaces", {}).get("", {}).get(name)
        if found is not None:
            return clone(found)
        return self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def close(self) -> None:
        with self.lock:
            watchers = [w for group in self._watchers.values() for w in group]
        for watcher in watchers:
            watcher.close()
        self._dispatcher.stop()
