"""The controller runtime's settings: how informers list and watch, and the Lease the leader holds. Each
fails loudly on a bad value (ImproperlyConfigured naming the setting)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from kube.config import service_account_dir

from .leader import LeaseConfig

DEFAULT_LEASE_NAME = "argoml-controllers"


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
