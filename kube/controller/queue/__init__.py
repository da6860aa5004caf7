"""The never-lost reconcile queue on Celery + Redis (docs/concurrency.md).

    from kube.controller.queue import enqueue

    enqueue("ConfigMap", "default", "settings")   # from a watch event, an action or the resync

A worker runs each key with the reconciler its kind's controller registered
(`kube.controller.registry.register` in `<app>/controllers.py`).
"""

from .conf import QueueConf
from .core import QUEUE_NAME, TASK_NAME, CelerySender, ReconcileQueue, default_queue, enqueue, losses
from .keys import ObjectKey
from .registry import Reconciler, Registry, UnknownKindError, registry
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
    "registry",
]
