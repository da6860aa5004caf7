"""The operator's settings, read with defaults so a deployment sets only what it changes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from jobs import gang


def cluster_domain() -> str:
    """JOBS_CLUSTER_DOMAIN: the DNS suffix of fully qualified service names (e.g. `cluster.local`) in
    TF_CONFIG; empty by default, so names end in `.svc` and resolve through the pod's search path."""
    return str(getattr(settings, "JOBS_CLUSTER_DOMAIN", "") or "")


def gang_scheduler() -> gang.GangScheduler | None:
    """JOBS_GANG_SCHEDULER (`none`, `volcano`, `scheduler-plugins`) and JOBS_GANG_SCHEDULER_NAME (the
    scheduler name pods get; default `volcano` / `scheduler-plugins-scheduler`): None means no PodGroups,
    pods go to the default scheduler."""
    kind = str(getattr(settings, "JOBS_GANG_SCHEDULER", "none") or "none")
    if kind == "none":
        return None
    if kind not in gang.GANG_SCHEDULERS:
        choices = ", ".join(("none", *gang.GANG_SCHEDULERS))
        raise ImproperlyConfigured(f"JOBS_GANG_SCHEDULER={kind!r} must be one of: {choices}.")
    name = str(getattr(settings, "JOBS_GANG_SCHEDULER_NAME", "") or "") or gang.DEFAULT_SCHEDULER_NAMES[kind]
    return gang.GangScheduler(kind, name)


def kubeflow_v1() -> bool:
    """JOBS_KUBEFLOW_V1: also serve the training kinds as `kubeflow.org/v1` (their CRDs must exist: a
    controller of a kind the cluster does not serve would fail to list it forever)."""
    return bool(getattr(settings, "JOBS_KUBEFLOW_V1", False))


def now() -> datetime:
    """The operator's clock: JOBS_CLOCK (a dotted path to a function returning an aware datetime), else
    Django's. Tests point it at the simulator's clock, so deadlines and TTLs follow simulated time."""
    return _clock()()


@cache
def _clock() -> Callable[[], datetime]:
    return import_string(getattr(settings, "JOBS_CLOCK", "django.utils.timezone.now"))
