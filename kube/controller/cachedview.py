"""A reconcile's read of the leader's informer cache: one controller's objects and children, and the
expectations its writes leave for the next run (see runtime.py and expectations.py beside it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import expectations
from .informer import Informer
from .queue import ObjectKey
from .registry import Controller

#: The child informers' index of objects by the reconcile keys of their owners.
OWNER_INDEX = "owner"


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
