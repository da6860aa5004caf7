"""The controllers inside a Celery worker: a worker bootstep that runs the leader-elected watch loops.

Watches are not Celery tasks (an endless task breaks acks_late and the visibility timeout): the loops run
on threads of the worker's main process, started with the worker and stopped with it. A worker runs them
when started with `--controllers` or when settings.KUBE_CONTROLLERS_ENABLED is true; only the replica that
holds the Lease actually watches.

    celery -A argoml_site worker -Q reconcile --controllers

The `--controllers` option exists once `install(app)` ran at import time of the Celery app module (the CLI
parses options before the worker imports task modules); kube/tasks.py adds the bootstep itself.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

import click
from celery import Celery, bootsteps

from kube.logging import runtime_logger

if TYPE_CHECKING:
    from .runtime import ControllerManager

logger = runtime_logger(__name__)

# One instance, so that installing twice adds the option once (user_options holds sets).
CONTROLLERS_OPTION = click.Option(
    ["--controllers"],
    is_flag=True,
    default=False,
    help="Run the leader-elected watch loops of the registered controllers in this worker.",
)
SHUTDOWN_TIMEOUT_SECONDS = 10.0
#: The cyclic garbage collector's thresholds in a worker that runs the controllers (CPython's default:
#: 700, 10, 10). Its heap is the informer caches, hundreds of thousands of long-lived dicts, and its work a
#: stream of short-lived ones (watch events, requests, plans): a young collection every 700 allocations
#: and an old one every 100 of them cost about 5 % of its CPU (bench/jobs_operator.py, 1,000 jobs) for
#: garbage that is almost never cyclic. Collections still run, 70 times less often; peak RSS unchanged.
CONTROLLER_GC_THRESHOLDS = (50_000, 20, 20)


def controllers_enabled(option: bool | None) -> bool:
    from django.conf import settings

    return bool(option) or bool(getattr(settings, "KUBE_CONTROLLERS_ENABLED", False))


class ControllersStep(bootsteps.StartStopStep):
    """Starts leader election with the worker; the informers run only while this worker leads."""

    # After the pool: prefork children are forked before any of our threads exist.
    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, controllers: bool | None = None, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.manager: ControllerManager | None = None
        self.enabled = controllers_enabled(controllers)

    def create(self, parent: Any) -> None:
        from .runtime import manager_from_settings

        # Built here, in the main thread at start-up, so a controller without a reconciler stops the worker.
        self.manager = manager_from_settings(identity_prefix=getattr(parent, "hostname", None))
        gc.set_threshold(*CONTROLLER_GC_THRESHOLDS)

    def start(self, parent: Any) -> None:
        if self.manager is not None:
            logger.info(
                "controllers: campaigning for lease %s/%s as %s",
                self.manager.elector.config.namespace,
                self.manager.elector.config.name,
                self.manager.elector.config.identity,
            )
            self.manager.start()

    def stop(self, parent: Any) -> None:
        if self.manager is not None:
            self.manager.stop(SHUTDOWN_TIMEOUT_SECONDS)

    def terminate(self, parent: Any) -> None:
        self.stop(parent)


def add_step(app: Celery) -> None:
    """Add the bootstep (disabled unless asked for); safe before the worker builds its blueprint."""
    app.steps["worker"].add(ControllersStep)


def install(app: Celery) -> None:
    """Add the bootstep and the worker's `--controllers` option; call it where the Celery app is made."""
    add_step(app)
    app.user_options["worker"].add(CONTROLLERS_OPTION)  # type: ignore[attr-defined]  # missing from stubs
