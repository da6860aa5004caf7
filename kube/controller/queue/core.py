"""The reconcile queue: enqueue a key, run it in a worker, sweep up after crashes.

Celery carries one task message per pending key; Redis (see store.py) decides, atomically, whether a
delivered message may run. docs/concurrency.md explains the states and why no crash loses a key.
"""

from __future__ import annotations

import time
import uuid
from contextlib import AbstractContextManager
from functools import cache
from typing import Protocol

import redis
from celery import Celery, current_app
from django.conf import settings

from kube import metrics
from kube.errors import Conflict
from kube.logging import LogContext, log_context, resource_key, runtime_logger

from .conf import QueueConf, queue_conf_from_settings
from .keys import ObjectKey
from .lease import LeaseKeeper
from .registry import Registry, registry
from .store import Claimed, Enqueued, Finished, QueueStore, Result

logger = runtime_logger(__name__)

TASK_NAME = "kube.reconcile_key"
QUEUE_NAME = "reconcile"


class Sender(Protocol):
    def __call__(self, key: ObjectKey, countdown: float) -> None: ...


class CelerySender:
    """Publishes the `kube.reconcile_key` message of a key on the `reconcile` queue."""

    def __init__(self, app: Celery | None = None) -> None:
        self._app = app

    def __call__(self, key: ObjectKey, countdown: float) -> None:
        app = self._app or current_app
        app.send_task(
            TASK_NAME,
            args=(key.kind, key.namespace, key.name),
            queue=QUEUE_NAME,
            countdown=countdown if countdown > 0 else None,
            ignore_result=True,
        )


class ReconcileQueue:
    def __init__(
        self, store: QueueStore, conf: QueueConf, send: Sender, reconcilers: Registry = registry
    ) -> None:
        self.store = store
        self.conf = conf
        self._send_message = send
        self.reconcilers = reconcilers

    # --- Producer side ------------------------------------------------------------------------------

    def enqueue(self, kind: str, namespace: str, name: str) -> Enqueued:
        """Ask for one reconcile of the key; cheap and safe to call for every watch event.

        A Redis error propagates. If sending fails after the key was marked pending, the sweep sends it
        later (after KUBE_QUEUE_RESEND_AFTER_SECONDS), so the request is not lost either way.
        """
        key = ObjectKey(kind, namespace, name)
        outcome = self.store.enqueue(key)
        metrics.workqueue_depth.labels(key.controller).set(outcome.depth)
        if outcome.newly_pending:
            metrics.workqueue_adds_total.labels(key.controller).inc()
        if outcome.needs_message:
            self._send(key, 0.0)
        return outcome.status

    def _send(self, key: ObjectKey, countdown: float) -> None:
        # A countdown message waits inside a worker, unacknowledged; capping it below the broker's
        # visibility timeout stops Redis from handing out copies. An early arrival is sent again (CLAIM).
        self._send_message(key, min(countdown, self.conf.backoff_max))

    # --- Worker side --------------------------------------------------------------------------------

    def process(self, kind: str, namespace: str, name: str) -> str:
        """Handle one delivered message: run the key's reconciler if Redis says it may run now.

        Returns what happened (a Claimed status when it did not run, else the run's Result), for logs.
        Everything logged meanwhile, by the reconciler too, carries the controller and the key.
        """
        key = ObjectKey(kind, namespace, name)
        with _log_context(key):
            return self._process(key)

    def _process(self, key: ObjectKey) -> str:
        token = uuid.uuid4().hex
        lease_ms = QueueConf.ms(self.conf.lease)
        claim = self.store.claim(key, token, lease_ms)
        metrics.workqueue_depth.labels(key.controller).set(claim.depth)
        if claim.status is Claimed.EARLY:
            self._send(key, claim.seconds)
        if not claim.may_run:
            logger.debug("Not running: %s", claim.status)
            return claim.status.value
        if claim.status is Claimed.TOOK_OVER:
            logger.warning("Taking over a run whose worker stopped renewing its lease")
        metrics.workqueue_queue_duration_seconds.labels(key.controller).observe(claim.seconds)

        started = time.monotonic()
        with LeaseKeeper(self.store, key, token, lease_ms, self.conf.refresh_interval, claim.epoch) as lease:
            result, requeue_after = self._run(key)
        self._finish(key, token, result, requeue_after, lease.epoch)
        metrics.workqueue_work_duration_seconds.labels(key.controller).observe(time.monotonic() - started)
        return result.value

    def _finish(self, key: ObjectKey, token: str, result: Result, requeue_after: float, epoch: str) -> None:
        """Record the run's end in Redis and send the key's next message if it is owed another run."""
        finish = self.store.finish(
            key,
            token,
            result,
            backoff_base_ms=QueueConf.ms(self.conf.backoff_base),
            backoff_max_ms=QueueConf.ms(self.conf.backoff_max),
            requeue_after_ms=QueueConf.ms(requeue_after),
            epoch=epoch,
        )
        metrics.workqueue_depth.labels(key.controller).set(finish.depth)
        if finish.status is Finished.LOST:
            logger.warning("Lease was lost before the run finished; state left to its new owner")
            return
        if result is Result.ERROR:
            metrics.workqueue_retries_total.labels(key.controller).inc()
            logger.info("Retrying in %.3f s", finish.backoff)
        if finish.countdown is not None:
            self._send(key, finish.countdown)

    def _run(self, key: ObjectKey) -> tuple[Result, float]:
        """Call the reconciler; every exception is a failure to retry, never a crash of the worker."""
        started = time.monotonic()
        try:
            func = self.reconcilers.lookup(key.kind)
            returned = func(key.namespace, key.name)
        except Conflict as error:
            # Another writer changed the object between this run's read and its write (a user, the Trainer
            # progress endpoint): expected, and the retry reads it again; no traceback, as no code failed.
            logger.info("Reconcile met a newer version of what it wrote; retrying: %s", error)
            result, requeue_after = Result.ERROR, 0.0
        except Exception:  # UnknownKindError included: a worker deployed without the app retries too
            logger.exception("Reconcile failed")
            result, requeue_after = Result.ERROR, 0.0
        else:
            result, requeue_after = _interpret(returned)
        controller = key.controller
        metrics.reconcile_time_seconds.labels(controller).observe(time.monotonic() - started)
        metrics.reconcile_total.labels(controller, result.value).inc()
        if result is Result.ERROR:
            metrics.reconcile_errors_total.labels(controller).inc()
        return result, requeue_after

    # --- Housekeeping ---------------------------------------------------------------------------------

    def sweep(self) -> int:
        """Send messages for keys whose run died (lease lapsed) or whose message went missing (it died with
        the worker that had received it, or was never sent).

        Every worker consuming the `reconcile` queue calls this on a timer. Returns how many were sent.
        """
        sent = 0
        resend_after_ms = QueueConf.ms(self.conf.resend_after)
        live_workers = self.store.heartbeat("", 0)
        for kind in self.reconcilers.kinds():
            outcome = self.store.sweep(kind, resend_after_ms=resend_after_ms, live_workers=live_workers)
            metrics.workqueue_depth.labels(kind.lower()).set(outcome.depth)
            for key in outcome.recovered:
                with _log_context(key):
                    logger.warning("Its worker stopped renewing the lease: reconciling again")
                self._send(key, 0.0)
            for key, countdown in outcome.resent:
                with _log_context(key):
                    logger.warning("Its message died with a worker or was never sent: sending again")
                self._send(key, countdown)
            sent += len(outcome.recovered) + len(outcome.resent)
        return sent

    def heartbeat(self, worker: str) -> None:
        """Declare this worker alive for KUBE_QUEUE_WORKER_TIMEOUT_SECONDS (called every third of it)."""
        self.store.heartbeat(worker, QueueConf.ms(self.conf.worker_timeout))

    def losses(self, kind: str) -> int:
        """How many times this process found the kind's Redis data lost, after looking now (one STATUS step).

        Redis that restarted empty, failed over to an empty replica or was flushed comes back without the
        kind's epoch; any step of a process that saw the earlier one notices (docs/concurrency.md).
        """
        self.store.status(kind)
        return self.store.losses(kind)

    def reserve(self, kind: str, namespace: str, name: str, worker: str) -> None:
        """Note that `worker` holds a message of the key, so the sweep resends it if the worker dies."""
        self.store.reserve(ObjectKey(kind, namespace, name), worker)


def _interpret(returned: object) -> tuple[Result, float]:
    """A reconciler returns None (done) or a number of seconds after which to reconcile again."""
    if returned is None:
        return Result.SUCCESS, 0.0
    if isinstance(returned, int | float) and not isinstance(returned, bool) and returned >= 0:
        return Result.REQUEUE_AFTER, float(returned)
    logger.error("The reconciler returned %r; it must return None or a number of seconds >= 0", returned)
    return Result.ERROR, 0.0


def _log_context(key: ObjectKey) -> AbstractContextManager[LogContext]:
    return log_context(key.controller, resource_key(key.namespace, key.name))


@cache
def default_queue() -> ReconcileQueue:
    """The process's queue, on settings.REDIS_URL and the project's Celery app (built on first use)."""
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        decode_responses=True,
        socket_timeout=10,
        socket_connect_timeout=5,
        health_check_interval=30,
    )
    conf = queue_conf_from_settings()
    return ReconcileQueue(QueueStore(client, fence_ms=QueueConf.ms(conf.lease)), conf, CelerySender())


def enqueue(kind: str, namespace: str, name: str) -> Enqueued:
    """Ask for one reconcile of (kind, namespace, name); see ReconcileQueue.enqueue."""
    return default_queue().enqueue(kind, namespace, name)


def losses(kind: str) -> int:
    """How many times this process found the kind's queue data lost; see ReconcileQueue.losses."""
    return default_queue().losses(kind)
