"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Only the holder of the Lease runs the watch loops. A candidate takes the Lease when it is free or when its
holder has not renewed it for `lease_duration` as observed on the candidate's own clock (never by comparing
timestamps written by another machine). The holder renews every `retry_period`; if it cannot renew within
`renew_deadline` it stops leading at once, before anyone else may take over.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .client import KubeClient
from .errors import ApiError, Conflict, NotFound
from .resources import LEASE

logger = logging.getLogger(__name__)


def micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("Leader election needs lease_duration > renew_deadline > retry_period > 0.")


@dataclass
class LeaderElector:
    """Acquire, hold and release one Lease; call `on_started` when leading and `on_stopped` when not."""

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

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = micro_time(self.wall_clock())
        previous = previous or {}
        taking_over = previous.get("holderIdentity") != self.config.identity
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration)),
            "acquireTime": now if taking_over else previous.get("acquireTime", now),
            "renewTime": now,
            "leaseTransitions": int(previous.get("leaseTransitions") or 0)
            + (1 if taking_over and previous else 0),
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        try:
            lease = self.client.get(LEASE, self.config.name, self.config.namespace)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(None),
            }
            try:
                self.client.create(LEASE, body)
            except Conflict:
                return False
            self._observe(body["spec"])
            return True

        spec = lease.get("spec") or {}
        self._observe(spec)
        holder = spec.get("holderIdentity")
        held_by_other = bool(holder) and holder != self.config.identity
        if held_by_other and self.monotonic() < self._observed_at + self.config.lease_duration:
            return False
        lease["spec"] = self._spec(spec)
        try:
            self.client.replace(LEASE, lease)  # optimistic: a stale resourceVersion loses the race
        except Conflict:
            return False
        self._observe(lease["spec"])
        return True

    def _observe(self, spec: dict[str, Any]) -> None:
        """Remember when the record last changed, by our own clock."""
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseTransitions"))
        if record != self._observed_record:
            self._observed_record = record
            self._observed_at = self.monotonic()

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
        self._stop.set()

    def _sleep(self, seconds: float) -> bool:
        """Sleep with jitter; True when asked to stop meanwhile."""
        return self._stop.wait(seconds * random.uniform(1.0, 1.2))  # noqa: S311 - jitter

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except ApiError as error:
            logger.warning("leader election attempt failed: %s", error)
            return False

    def run(self) -> None:
        """Campaign, lead, and campaign again after losing the Lease, until `stop()`."""
        while not self._stop.is_set():
            if not self._attempt():
                self._sleep(self.config.retry_period)
                continue
            self._lead()
        if self.is_leader:
            self._step_down()
        self.release()

    def _lead(self) -> None:
        self.is_leader = True
        logger.info("became leader of lease %s/%s", self.config.namespace, self.config.name)
        self.on_started()
        last_renewed = self.monotonic()
        while not self._sleep(self.config.retry_period):
            if self._attempt():
                last_renewed = self.monotonic()
            elif self.monotonic() - last_renewed >= self.config.renew_deadline:
                logger.warning(
                    "lost lease %s/%s: not renewed in time", self.config.namespace, self.config.name
                )
                self._step_down()
                return
        # stop() was called while leading; run() releases the lease.

    def _step_down(self) -> None:
        if self.is_leader:
            self.is_leader = False
            self.on_stopped()
