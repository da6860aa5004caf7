"""The runtimes' reconcile: keep `trainer.kubeflow.org/resource-in-use` on it exactly while a
TrainJob references it, so deleting a runtime in use leaves it Terminating until its last TrainJob goes.

Reads the leader's cache when it can (the TrainJobs of a runtime are one index lookup there), else the
API. The finalizer is written with a merge patch carrying the resourceVersion it was decided from: a
runtime changed meanwhile answers 409 and the key runs again on the fresh object.
"""

from __future__ import annotations

import logging
from typing import Any

from kube.client import KubeClient, get_client
from kube.controller.runtime import cached_view
from kube.errors import Conflict, NotFound
from kube.resources import ResourceType
from trainer.resources import CLUSTER_TRAINING_RUNTIME, TRAIN_JOB, TRAINING_RUNTIME
from trainer.runtimes import inuse
from trainer.runtimes.usage import jobs_using

logger = logging.getLogger(__name__)

#: Seconds before a runtime whose finalizer write met a newer version runs again.
CONFLICT_RETRY_SECONDS = 0.5


def reconcile_training_runtime(namespace: str, name: str) -> float | None:
    return converge_finalizer(get_client(), TRAINING_RUNTIME, namespace, name)


def reconcile_cluster_training_runtime(namespace: str, name: str) -> float | None:
    return converge_finalizer(get_client(), CLUSTER_TRAINING_RUNTIME, "", name)


def converge_finalizer(client: KubeClient, rtype: ResourceType, namespace: str, name: str) -> float | None:
    """One pass: read the runtime and the TrainJobs using it, add or drop our finalizer."""
    view = cached_view(rtype.kind)
    runtime = view.get(namespace, name) if view is not None else _read(client, rtype, namespace, name)
    if runtime is None:
        return None
    if view is not None:
        users = view.children(TRAIN_JOB.kind, namespace, name)
    else:
        users = list(jobs_using(client, rtype.kind, namespace, name))
    metadata = runtime.get("metadata") or {}
    wanted = inuse.finalizers_wanted(list(metadata.get("finalizers") or ()), in_use=bool(users))
    if wanted is None:
        return None
    patch = {"metadata": {"finalizers": wanted, "resourceVersion": metadata.get("resourceVersion")}}
    try:
        client.patch(rtype, name, patch, namespace or None)
    except NotFound:
        return None
    except Conflict:
        return CONFLICT_RETRY_SECONDS
    logger.info(
        "%s %s: %s %s (%d TrainJobs use it)", rtype.kind, name,
        "added" if users else "removed", inuse.RESOURCE_IN_USE_FINALIZER, len(users),
    )  # fmt: skip
    return None


def _read(client: KubeClient, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return client.get(rtype, name, namespace or None)
    except NotFound:
        return None
