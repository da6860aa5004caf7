"""The queue's state in Redis: each transition is one Lua script, so it is atomic across all processes.

The scripts live in `lua/` (read them with docs/concurrency.md); this module gives them typed results.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, cast

import redis
from redis.commands.core import Script

from .keys import ObjectKey

KEY_PREFIX = "argoml:reconcile"
WORKERS_KEY = f"{KEY_PREFIX}:workers"  # ZSET worker id -> when its heartbeat lapses (ms, Redis clock)
_LUA_DIR = Path(__file__).with_name("lua")
DEFAULT_FENCE_MS = 10_000  # the default lease (KUBE_QUEUE_LEASE_SECONDS)


class Enqueued(StrEnum):
    ADDED = "added"  # newly pending: send a task message
    RECOVERED = "recovered"  # its run's lease had lapsed; pending again: send a task message
    DIRTY = "dirty"  # running: it runs once more afterwards
    ALREADY_PENDING = "already_pending"  # no-op


class Claimed(StrEnum):
    CLAIMED = "claimed"
    TOOK_OVER = "took_over"
    BUSY = "busy"
    STALE = "stale"
    EARLY = "early"


class Finished(StrEnum):
    IDLE = "idle"
    AGAIN = "again"
    LOST = "lost"


class Result(StrEnum):
    """What a run ended with; also the `result` label of controller_runtime_reconcile_total."""

    SUCCESS = "success"
    ERROR = "error"
    REQUEUE_AFTER = "requeue_after"


@dataclass(frozen=True, slots=True)
class EnqueueOutcome:
    status: Enqueued
    depth: int

    @property
    def needs_message(self) -> bool:
        return self.status in (Enqueued.ADDED, Enqueued.RECOVERED)

    @property
    def newly_pending(self) -> bool:
        """Counts as an add in workqueue_adds_total (client-go counts an add only when it was not dirty)."""
        return self.status is not Enqueued.ALREADY_PENDING


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    status: Claimed
    seconds: float  # claimed/took_over: time waited since due; early: time left until due
    depth: int
    epoch: str = ""  # the epoch the run's lease lives in: REFRESH and FINISH pass it back

    @property
    def may_run(self) -> bool:
        return self.status in (Claimed.CLAIMED, Claimed.TOOK_OVER)


@dataclass(frozen=True, slots=True)
class FinishOutcome:
    status: Finished
    countdown: float | None  # set when the key is pending again: send its message with this delay
    depth: int
    backoff: float | None  # set after a failure: the delay the failure earned


@dataclass(frozen=True, slots=True)
class RefreshOutcome:
    held: bool  # False once the lease was taken back: stop renewing, FINISH will leave the state alone
    epoch: str  # the epoch the lease lives in now (another one after the data was lost and taken back)


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One atomic read of a kind's state (see lua/status.lua)."""

    due: int  # pending and due now
    waiting: int  # pending for later: a backoff or a requeue_after
    running: int
    dirty: int  # running, with one more run owed afterwards

    @property
    def owed_now(self) -> bool:
        """A run is due or in progress, or owed after one in progress: the queue has not caught up."""
        return bool(self.due or self.running or self.dirty)


@dataclass(frozen=True, slots=True)
class SweepOutcome:
    depth: int
    recovered: list[ObjectKey]
    resent: list[tuple[ObjectKey, float]]  # each key with the countdown its new message needs (seconds)


@cache
def _lua(name: str, prelude: bool = True) -> str:
    body = (_LUA_DIR / f"{name}.lua").read_text()
    return (_LUA_DIR / "prelude.lua").read_text() + "\n" + body if prelude else body


def _seconds(milliseconds: int) -> float:
    return milliseconds / 1000


class QueueStore:
    """Typed access to the seven Redis keys of each kind and to the workers' heartbeats.

    The client must decode responses to str. `fence_ms` is the queue's lease: after the data was lost, no
    pending key is claimed until a lease after the new epoch began (see lua/prelude.lua).

    The store remembers, per kind, the epoch this process last saw, and passes it to every step: that is
    how a process that saw an earlier life of the data notices the loss. `losses(kind)` counts the losses
    noticed; the leader re-enqueues every key it knows when that count grows (kube/controller/runtime.py).
    """

    def __init__(self, client: redis.Redis, fence_ms: int = DEFAULT_FENCE_MS) -> None:
        self.client = client
        self.fence_ms = fence_ms
        self._epochs: dict[str, str] = {}
        self._losses: dict[str, int] = {}
        self._epochs_lock = threading.Lock()
        self._enqueue = self._script("enqueue")
        self._claim = self._script("claim")
        self._refresh = self._script("refresh")
        self._finish = self._script("finish")
        self._sweep = self._script("sweep")
        self._status = self._script("status")
        self._heartbeat = Script(self.client, _lua("heartbeat", prelude=False))

    def _script(self, name: str) -> Script:
        return Script(self.client, _lua(name))

    @staticmethod
    def keys(kind: str) -> list[str]:
        """pending, running, owner, dirty, failures, reserved, epoch of a kind; the hash tag keeps them in
        one cluster slot."""
        base = f"{KEY_PREFIX}:{{{kind}}}"
        names = ("pending", "running", "owner", "dirty", "failures", "reserved", "epoch")
        return [f"{base}:{name}" for name in names]

    def _step(self, script: Script, kind: str, args: list[str | int], epoch: str | None = None) -> list[Any]:
        """Run one step of a kind with the epoch this process (or, when given, the run) last saw, and note
        the epoch it returns (its last element)."""
        known = self._epochs.get(kind, "") if epoch is None else epoch
        reply = list(script(keys=self.keys(kind), args=[known, self.fence_ms, *args]))
        self._saw(kind, reply[-1])
        return reply

    def _saw(self, kind: str, epoch: str) -> None:
        with self._epochs_lock:
            previous = self._epochs.get(kind)
            if previous != epoch:
                if previous is not None:
                    self._losses[kind] = self._losses.get(kind, 0) + 1
                self._epochs[kind] = epoch

    def losses(self, kind: str) -> int:
        """How many times this process found the kind's data lost (a new epoch) since it first saw it."""
        with self._epochs_lock:
            return self._losses.get(kind, 0)

    def enqueue(self, key: ObjectKey) -> EnqueueOutcome:
        status, depth, _epoch = self._step(self._enqueue, key.kind, [key.member])
        return EnqueueOutcome(Enqueued(status), int(depth))

    def claim(self, key: ObjectKey, token: str, lease_ms: int) -> ClaimOutcome:
        status, ms, depth, epoch = self._step(self._claim, key.kind, [key.member, token, lease_ms])
        return ClaimOutcome(Claimed(status), _seconds(int(ms)), int(depth), epoch)

    def refresh(self, key: ObjectKey, token: str, lease_ms: int, epoch: str) -> RefreshOutcome:
        """Extend the run's lease; `epoch` is the one its lease was last confirmed in (CLAIM's, or the last
        REFRESH's)."""
        held, current = self._step(self._refresh, key.kind, [key.member, token, lease_ms], epoch)
        return RefreshOutcome(bool(held), current)

    def finish(
        self,
        key: ObjectKey,
        token: str,
        result: Result,
        *,
        backoff_base_ms: int,
        backoff_max_ms: int,
        requeue_after_ms: int = 0,
        epoch: str | None = None,
    ) -> FinishOutcome:
        args: list[str | int] = [key.member, token, result.value, backoff_base_ms, backoff_max_ms]
        args.append(requeue_after_ms)
        status, countdown_ms, depth, backoff_ms, _epoch = self._step(self._finish, key.kind, args, epoch)
        return FinishOutcome(
            Finished(status),
            None if int(countdown_ms) < 0 else _seconds(int(countdown_ms)),
            int(depth),
            None if int(backoff_ms) < 0 else _seconds(int(backoff_ms)),
        )

    def reserve(self, key: ObjectKey, worker: str) -> None:
        """Note that `worker` received a task message of the key; CLAIM forgets it when the message runs.

        If the worker dies first, the message dies with it (Redis would return it only after the broker's
        visibility timeout): the sweep sends it again once the worker's heartbeat lapses.
        """
        self.client.hset(self.keys(key.kind)[5], key.member, worker)

    def heartbeat(self, worker: str, ttl_ms: int) -> list[str]:
        """Declare `worker` alive for ttl_ms ('' declares nobody); returns the ids of the live workers."""
        return list(self._heartbeat(keys=[WORKERS_KEY], args=[worker, ttl_ms]))

    def sweep(
        self, kind: str, *, resend_after_ms: int, live_workers: list[str], limit: int = 100
    ) -> SweepOutcome:
        args: list[str | int] = [resend_after_ms, limit, *live_workers]
        depth, recovered, resent, countdowns, _epoch = self._step(self._sweep, kind, args)
        return SweepOutcome(
            int(depth),
            [ObjectKey.from_member(kind, member) for member in recovered],
            [
                (ObjectKey.from_member(kind, member), _seconds(int(ms)))
                for member, ms in zip(resent, countdowns, strict=True)
            ],
        )

    def status(self, kind: str) -> QueueStatus:
        due, waiting, running, dirty, _epoch = self._step(self._status, kind, [])
        return QueueStatus(int(due), int(waiting), int(running), int(dirty))

    def failures(self, key: ObjectKey) -> int:
        """Consecutive failed runs of the key (0 after a success)."""
        count = self.client.hget(self.keys(key.kind)[4], key.member)
        return int(cast(str, count) or 0)
