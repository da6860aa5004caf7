"""The queue's tunables: Django settings with defaults, checked once so a bad value stops start-up."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Setting name → default. Documented in docs/concurrency.md ("Settings").
DEFAULTS: dict[str, float] = {
    "KUBE_QUEUE_BACKOFF_BASE_SECONDS": 0.005,
    "KUBE_QUEUE_BACKOFF_MAX_SECONDS": 1000.0,
    "KUBE_QUEUE_LEASE_SECONDS": 10.0,
    "KUBE_QUEUE_SWEEP_INTERVAL_SECONDS": 2.0,
    "KUBE_QUEUE_RESEND_AFTER_SECONDS": 300.0,
    "KUBE_QUEUE_WORKER_TIMEOUT_SECONDS": 6.0,
    "KUBE_RECONCILE_TIME_LIMIT_SECONDS": 600,
}


@dataclass(frozen=True, slots=True)
class QueueConf:
    """Times in seconds. Redis works in whole milliseconds, hence the `*_ms` views."""

    backoff_base: float = DEFAULTS["KUBE_QUEUE_BACKOFF_BASE_SECONDS"]
    backoff_max: float = DEFAULTS["KUBE_QUEUE_BACKOFF_MAX_SECONDS"]
    lease: float = DEFAULTS["KUBE_QUEUE_LEASE_SECONDS"]
    sweep_interval: float = DEFAULTS["KUBE_QUEUE_SWEEP_INTERVAL_SECONDS"]
    resend_after: float = DEFAULTS["KUBE_QUEUE_RESEND_AFTER_SECONDS"]
    worker_timeout: float = DEFAULTS["KUBE_QUEUE_WORKER_TIMEOUT_SECONDS"]

    def __post_init__(self) -> None:
        for field, value in (
            ("backoff_base", self.backoff_base),
            ("backoff_max", self.backoff_max),
            ("lease", self.lease),
            ("sweep_interval", self.sweep_interval),
            ("resend_after", self.resend_after),
            ("worker_timeout", self.worker_timeout),
        ):
            if not value > 0:
                raise ValueError(f"{field}: {value!r} must be a positive number of seconds.")
        if self.backoff_max < self.backoff_base:
            raise ValueError(f"backoff_max: {self.backoff_max} is below backoff_base {self.backoff_base}.")
        if self.lease < 0.03:
            raise ValueError(f"lease: {self.lease} s is too short to be refreshed (minimum 0.03 s).")

    @property
    def refresh_interval(self) -> float:
        """Renew at a third of the lease, so two missed renewals in a row still keep it."""
        return self.lease / 3

    @property
    def heartbeat_interval(self) -> float:
        """Renew at a third of the timeout, so one late tick does not make a worker look dead."""
        return self.worker_timeout / 3

    @staticmethod
    def ms(seconds: float) -> int:
        return max(0, round(seconds * 1000))


def _number(name: str) -> float:
    value = getattr(settings, name, DEFAULTS[name])
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ImproperlyConfigured(f"{name}={value!r} must be a positive number of seconds.")
    return float(value)


def queue_conf_from_settings() -> QueueConf:
    """The queue settings; refuses a backoff that Redis would redeliver while a worker still holds it."""
    conf = QueueConf(
        backoff_base=_number("KUBE_QUEUE_BACKOFF_BASE_SECONDS"),
        backoff_max=_number("KUBE_QUEUE_BACKOFF_MAX_SECONDS"),
        lease=_number("KUBE_QUEUE_LEASE_SECONDS"),
        sweep_interval=_number("KUBE_QUEUE_SWEEP_INTERVAL_SECONDS"),
        resend_after=_number("KUBE_QUEUE_RESEND_AFTER_SECONDS"),
        worker_timeout=_number("KUBE_QUEUE_WORKER_TIMEOUT_SECONDS"),
    )
    visibility = getattr(settings, "CELERY_VISIBILITY_TIMEOUT", None)
    if visibility is not None and conf.backoff_max >= visibility:
        raise ImproperlyConfigured(
            f"KUBE_QUEUE_BACKOFF_MAX_SECONDS={conf.backoff_max} must stay below CELERY_VISIBILITY_TIMEOUT="
            f"{visibility}: a retry waits inside a worker as a countdown task; Redis would hand it out again."
        )
    return conf


def reconcile_time_limit() -> int:
    """Soft time limit of one reconcile: past it the run fails (and backs off) instead of holding its key."""
    return math.ceil(_number("KUBE_RECONCILE_TIME_LIMIT_SECONDS"))
