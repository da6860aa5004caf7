"""The never-lost reconcile queue on Celery + Redis (docs/concurrency.md).

from kube.queue import enqueue, reconciler

@reconciler("ConfigMap")          # in <app>/reconcile.py, discovered by the worker
def reconcile_configmap(namespace: str, name: str) -> float | None: ...

enqueue("ConfigMap", "default", "settings")   # from a watch event, an action or the resync
"""

from .conf import QueueConf
from .core import QUEUE_NAME, TASK_NAME, CelerySender, ReconcileQueue, default_queue, enqueue, losses
from .keys import ObjectKey
from .registry import Reconciler, Registry, UnknownKindError, reconciler, register, registry
from .store import Enqueued, QueueStore, Result

__all__ = [
    "QUEUE_NAME",
    "TASK_NAME",
    "CelerySender",
    "Enqueued",
    "ObjectKey",
    "QueueConf",
    "QueueStore",
    "ReconcileQueue",
    "Reconciler",
    "Registry",
    "Result",
    "UnknownKindError",
    "default_queue",
    "enqueue",
    "losses",
    "reconciler",
    "register",
    "registry",
]
