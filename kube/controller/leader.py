"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Only the holder of the Lease runs the watch loops. A candidate takes the Lease when it is free or when its
holder has not renewed it for the record's `leaseDurationSeconds` as observed on the candidate's own clock
(never by comparing timestamps written by another machine). The holder renews every `retry_period`; if it
cannot renew within `renew_deadline` it stops leading at once, even while a renewal is still stuck on the
network, so it has stopped before anyone else may take over (lease_duration > renew_deadline).
"""

from __future__ import annotations

import enum
import logging
import math
import queue
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prometheus_client import Gauge

from kube.client import KubeClient
from kube.errors import ApiError, Conflict, NotFound
from kube.logging import runtime_logger
from kube.resources import LEASE

logger = runtime_logger(__name__)

leader_election_master_status = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
    "master.",
    ["name"],
)


def micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "lease_duration, renew_deadline, retry_period: leader election needs lease_duration > "
                f"renew_deadline > retry_period > 0, got {self.lease_duration}, {self.renew_deadline}, "
                f"{self.retry_period}."
            )
        if not self.identity:
            raise ValueError("identity: every candidate needs a unique, non-empty identity.")


class Attempt(enum.Enum):
    HELD = "held"  # this candidate holds the Lease now
    TAKEN = "taken"  # another candidate holds a Lease that has not expired
    FAILED = "failed"  # no answer, an error or a lost write race: nothing is known


class CallThread:
    """Runs calls one at a time on a daemon thread of its own.

    The caller waits for a result only as long as it likes; a call stuck on the network delays neither
    the caller nor the interpreter's exit (a ThreadPoolExecutor's threads are joined at exit).
    """

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self._calls.put((call, future))
        return future

    def close(self) -> None:
        self._calls.put(None)

    def _run(self) -> None:
        while (item := self._calls.get()) is not None:
            call, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as error:
                    future.set_exception(error)


@dataclass
class LeaderElector:
    """Acquire, hold and release one Lease; call `on_started` when leading and `on_stopped` when not.

    Both callbacks run on the elector's thread and must return quickly.
    """

    client: KubeClient
    config: LeaseConfig
    on_started: Callable[[], None]
    on_stopped: Callable[[], None]
    monotonic: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    is_leader: bool = False
    _observed_record: tuple[Any, ...] | None = None
    _observed_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    # One thread makes the API calls, so a call stuck on the network never delays stepping down.
    _calls: CallThread = field(default_factory=lambda: CallThread("lease-calls"))

    # -- one attempt -----------------------------------------------------------------------------------
    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = micro_time(self.wall_clock())
        previous = previous or {}
        taking_over = previous.get("holderIdentity") != self.config.identity
        return {
            "holderIdentity": self.config.identity,
            # Rounded up: others must never see a shorter lease than the one this holder steps down by.
            "leaseDurationSeconds": math.ceil(self.config.lease_duration),
            "acquireTime": now if taking_over else previous.get("acquireTime", now),
            "renewTime": now,
            "leaseTransitions": int(previous.get("leaseTransitions") or 0)
            + (1 if taking_over and previous else 0),
        }

    def try_acquire_or_renew(self) -> Attempt:
        """One attempt to take or keep the Lease."""
        try:
            lease = self.client.get(LEASE, self.config.name, self.config.namespace)
        except NotFound:
            body: dict[str, Any] = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(None),
            }
            try:
                self.client.create(LEASE, body)
            except Conflict:
                return Attempt.FAILED
            self._observe(body["spec"])
            return Attempt.HELD

        spec = lease.get("spec") or {}
        self._observe(spec)
        holder = spec.get("holderIdentity")
        if holder and holder != self.config.identity:
            duration = spec.get("leaseDurationSeconds") or self.config.lease_duration
            if self.monotonic() < self._observed_at + duration:
                return Attempt.TAKEN
        lease["spec"] = self._spec(spec)
        try:
            self.client.replace(LEASE, lease)  # optimistic: a stale resourceVersion loses the race
        except Conflict:
            return Attempt.FAILED
        self._observe(lease["spec"])
        return Attempt.HELD

    def _observe(self, spec: dict[str, Any]) -> None:
        """Remember when the record last changed, by our own clock."""
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = self.monotonic()

    def _attempt(self, timeout: float | None = None) -> Attempt:
        """One attempt on the call thread; FAILED when it errs or has not answered within `timeout`."""
        future = self._calls.submit(self.try_acquire_or_renew)
        try:
            return future.result(timeout=timeout)
        except FutureTimeout:
            logger.warning("leader election attempt on lease %s timed out", self.config.name)
        except ApiError as error:
            logger.warning("leader election attempt on lease %s failed: %s", self.config.name, error)
        return Attempt.FAILED

    # -- the loop --------------------------------------------------------------------------------------
    def run(self) -> None:
        """Campaign, lead, and campaign again after losing the Lease, until `stop()`."""
        try:
            while not self._stop.is_set():
                started = self.monotonic()
                if self._attempt() is Attempt.HELD:
                    self._lead(renewed_at=started)
                else:
                    self._stop.wait(self.config.retry_period * random.uniform(1.0, 1.2))  # noqa: S311
            self._step_down("stopping", level=logging.INFO)
            self.release()
        finally:
            self._calls.close()

    def _lead(self, renewed_at: float) -> None:
        """Lead until a renewal fails for `renew_deadline`, another holder shows up, or `stop()`.

        `renewed_at` is when the last successful attempt *started*: the server wrote the renewal after that
        instant, so every other candidate's expiry clock started later than ours.
        """
        self._set_leader(True)
        logger.info("became leader of lease %s/%s", self.config.namespace, self.config.name)
        self.on_started()
        while True:
            deadline = renewed_at + self.config.renew_deadline
            pause = min(self.config.retry_period, max(0.0, deadline - self.monotonic()))
            if self._stop.wait(pause):
                return  # run() steps down and releases the Lease
            started = self.monotonic()
            if started >= deadline:
                self._step_down("not renewed within the renew deadline")
                return
            outcome = self._attempt(timeout=deadline - started)
            if outcome is Attempt.HELD:
                renewed_at = started
            elif outcome is Attempt.TAKEN:
                self._step_down("another candidate holds it")
                return

    def _set_leader(self, leading: bool) -> None:
        self.is_leader = leading
        leader_election_master_status.labels(self.config.name).set(1 if leading else 0)

    def _step_down(self, why: str, level: int = logging.WARNING) -> None:
        if self.is_leader:
            logger.log(level, "stopped leading lease %s/%s: %s", self.config.namespace, self.config.name, why)
            self._set_leader(False)
            self.on_stopped()

    def release(self) -> None:
        """Give the Lease up on a clean shutdown, so another candidate takes over without waiting."""
        try:
            lease = self.client.get(LEASE, self.config.name, self.config.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.config.identity:
                return
            lease["spec"].update(
                holderIdentity="", leaseDurationSeconds=1, renewTime=micro_time(self.wall_clock())
            )
            self.client.replace(LEASE, lease)
        except ApiError as error:
            logger.warning("could not release lease %s: %s", self.config.name, error)

    def stop(self) -> None:
        """Ask `run()` to step down, release the Lease and return."""
        self._stop.set()
