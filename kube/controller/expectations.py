"""What a reconcile waits to see in the informer cache after its own writes (client-go's and Kubeflow's
ControllerExpectations).

A reconcile that reads the cache right after creating a job's pods may not find them yet: its watch events
are still on the way. Deciding from that view would create them again (409s) and write a status computed
from half the children. So a reconcile records what it expects to observe before it writes (a creation, a
deletion, the resourceVersion its status write returned); the informers' handler marks each item observed
when its event arrives; and a reconcile of a key with items still pending waits for them instead of
deciding. A write the server acknowledged always shows up in the watch, however far the cache lags (a
resumed watch replays every event since the last one seen, and a relist clears every expectation), so an
item is expected until seen: the `ttl` (5 minutes, client-go's ExpectationsTimeout) is only a backstop
for an event that can never come (say, a child whose labels no informer selects), never the pace of a
busy controller: a cache thousands of events behind makes its reconciles wait, not create twice.

The event of a key's own write of its object (the status it wrote) needs no run of its own: the run that
wrote it decided with it in mind (controller-runtime filters such events with predicates). So `observe`
says whether an item was one of the key's own, and `take_held` whether a run was held back meanwhile and
is now free to go: only then does that event enqueue the key (kube/controller/runtime.py).

Nor does the event of one of several children a run created: a run it enqueued would find the others
still pending and do nothing. `observe_awaited` holds the key instead, and the event of the last item
enqueues it (`take_held`): a job of 4 pods and 4 services costs one run after its creation, not one per
child event that beats the others to the queue. A run that writes a status counting the children it
created says so (`count`): their events then owe no run at all, wherever they arrive. Should the last item
never come, `release_expired` hands the held key back once its items expired (the runtime checks every
EXPIRED_CHECK_SECONDS).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import orjson

from .queue import ObjectKey

DEFAULT_TTL_SECONDS = 300.0
#: How often the runtime asks for held keys whose items expired (`release_expired`).
EXPIRED_CHECK_SECONDS = 30.0

Item = tuple[Hashable, ...]


def created(kind: str, name: str) -> Item:
    """A child this reconcile is creating: observed by any event of that child."""
    return ("create", kind, name)


def deleted(kind: str, name: str) -> Item:
    """A child this reconcile is deleting: observed by its DELETED event, or one marked for deletion."""
    return ("delete", kind, name)


def version(resource_version: str) -> Item:
    """The resourceVersion a write of the object itself returned: observed by its event."""
    return ("version", resource_version)


def status_written(status: Mapping[str, Any]) -> Item:
    """A status this reconcile is writing, expected before it is sent: the write's event may reach the
    informer before its answer gives the resourceVersion to expect, and then it is known by its status."""
    canonical = orjson.dumps(status, option=orjson.OPT_SORT_KEYS, default=str)
    return (STATUS, hashlib.blake2b(canonical, digest_size=16).digest())


STATUS = "status"


class Expectations:
    """Pending items by reconcile key; thread-safe (reconcile threads expect, the watch threads observe)."""

    def __init__(self, ttl: float = DEFAULT_TTL_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        if not ttl > 0:
            raise ValueError(f"ttl: {ttl} must be a positive number of seconds.")
        self.ttl = ttl
        self._clock = clock
        self._pending: dict[ObjectKey, dict[Item, float]] = {}
        self._held: set[ObjectKey] = set()  # keys whose run found items pending and did nothing
        # Child events that owe the key a run, deferred until nothing is pending (observe_awaited).
        self._deferred: dict[ObjectKey, set[Item]] = {}
        # Children a run created and counted in the status it wrote: their events owe no run (count).
        self._counted: dict[ObjectKey, set[Item]] = {}
        self._lock = threading.Lock()

    def expect(self, key: ObjectKey, items: Iterable[Item], *, instead_of: Item | None = None) -> None:
        """Expect `items` of the key's writes; `instead_of`, an item they make redundant, is dropped at once
        (a status write's answer names the resourceVersion its event will carry)."""
        deadline = self._clock() + self.ttl
        with self._lock:
            pending = self._pending.setdefault(key, {})
            if instead_of is not None:
                pending.pop(instead_of, None)
            for item in items:
                pending[item] = deadline
            if not pending:
                self._done(key)

    def observe(self, key: ObjectKey, item: Item) -> bool:
        """The item was seen (or will never come: a write that failed). True when the key was waiting for
        it (the event is of its own write); unknown items are ignored (False)."""
        with self._lock:
            pending = self._pending.get(key)
            if pending is None or pending.pop(item, None) is None:
                return False
            self._counted.get(key, set()).discard(item)
            if not pending:
                self._done(key)
            return True

    def observe_awaited(self, key: ObjectKey, items: Iterable[Item]) -> bool:
        """Observe a child event's items; True when the event needs no run of its own: its child was
        counted in a status the key's run wrote, or others are still pending (the run it owes is then
        deferred: the event of the last pending item enqueues the key, see `take_held`)."""
        with self._lock:
            pending = self._pending.get(key)
            if pending is None:
                return False
            expected = [item for item in items if pending.pop(item, None) is not None]
            if not expected:
                return False  # news the runs did not cause
            counted = self._counted.get(key, set())
            owed = [item for item in expected if item not in counted]
            counted.difference_update(expected)
            if pending:
                if owed:
                    self._deferred.setdefault(key, set()).update(owed)
                return True
            owes = bool(owed) or key in self._held or bool(self._deferred.get(key))
            self._done(key)
            self._held.discard(key)
            self._deferred.pop(key, None)
            return not owes

    def count(self, key: ObjectKey, items: Iterable[Item]) -> None:
        """The key's run counted these children (it created them) in the status it wrote: their events
        owe no run, and those that came already no longer do."""
        with self._lock:
            items = set(items)
            deferred = self._deferred.get(key)
            if deferred is not None:
                deferred -= items
                if not deferred:
                    del self._deferred[key]
            pending = self._pending.get(key)
            if pending is not None:
                self._counted.setdefault(key, set()).update(item for item in items if item in pending)

    def release_expired(self) -> list[ObjectKey]:
        """The keys owed a run (held, or with deferred events) whose pending items all expired, no longer
        owed or waiting: their runs are due now (the event of an item never came)."""
        now = self._clock()
        with self._lock:
            owed = self._held | set(self._deferred)
            released = [
                key
                for key in owed
                if all(deadline <= now for deadline in self._pending.get(key, {}).values())
            ]
            for key in released:
                self._held.discard(key)
                self._deferred.pop(key, None)
                self._pending.pop(key, None)
                self._counted.pop(key, None)
            return released

    def _done(self, key: ObjectKey) -> None:
        """Nothing of the key is pending any more (under the lock)."""
        self._pending.pop(key, None)
        self._counted.pop(key, None)

    def awaits_status(self, key: ObjectKey) -> bool:
        """Whether a run of the key is writing a status (see `status_written`) not yet observed."""
        with self._lock:
            return any(item[0] == STATUS for item in self._pending.get(key, ()))

    def take_held(self, key: ObjectKey) -> bool:
        """True (once) when the key is owed a run (one was held back by pending items, or child events were
        deferred) and none is pending now."""
        with self._lock:
            if key in self._pending or (key not in self._held and key not in self._deferred):
                return False
            self._held.discard(key)
            self._deferred.pop(key, None)
            return True

    def drop(self, key: ObjectKey) -> None:
        """Forget everything the key waits for (the object is gone)."""
        with self._lock:
            self._done(key)
            self._held.discard(key)
            self._deferred.pop(key, None)

    def clear(self) -> None:
        """Forget everything: a relist replaced the cache, which now shows every write that was acknowledged
        before the list began; a write still in flight at worst shows up as a 409 on the next run."""
        with self._lock:
            self._pending.clear()
            self._held.clear()
            self._deferred.clear()
            self._counted.clear()

    def waiting(self, key: ObjectKey) -> float | None:
        """None when the key waits for nothing; else the seconds until its last pending item expires, and
        the run asking is held back (the event of the last item then enqueues the key, see take_held)."""
        now = self._clock()
        with self._lock:
            pending = self._pending.get(key, {})
            for item in [item for item, deadline in pending.items() if deadline <= now]:
                del pending[item]
            if not pending:
                # This run decides with all it waited for: it is the run anything owed the key.
                self._done(key)
                self._held.discard(key)
                self._deferred.pop(key, None)
                return None
            self._held.add(key)
            return max(pending.values()) - now

    def __len__(self) -> int:
        return len(self._pending)
