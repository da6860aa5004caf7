"""The Celery app: queues `reconcile` and `default`, Redis broker and results, beat from the database."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, task_postrun, worker_init, worker_process_shutdown
from kombu import Exchange, Queue

from kube.controller.bootstep import install as install_controllers_option

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")

app = Celery("argoml")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name, Exchange(name), routing_key=name) for name in ("reconcile", "default")]
app.autodiscover_tasks()
# `celery worker --controllers`: the option must exist before the CLI parses it (kube/controller/bootstep.py).
install_controllers_option(app)


@worker_init.connect
def _serve_worker_metrics(**kwargs: object) -> None:
    from django.conf import settings

    from .metrics import serve_worker_metrics

    if settings.WORKER_METRICS_PORT:
        serve_worker_metrics(settings.WORKER_METRICS_PORT, settings.METRICS_TOKEN)


@worker_process_shutdown.connect
def _forget_pool_process(pid: int | None = None, **kwargs: object) -> None:
    from .metrics import forget_dead_process

    forget_dead_process(pid or os.getpid())


@task_postrun.connect
def _count_task(sender: object = None, state: str | None = None, **kwargs: object) -> None:
    from .metrics import count_task

    count_task(getattr(sender, "name", "unknown"), state)


@after_setup_logger.connect
def _format_worker_logs_like_the_web(logger: logging.Logger, **kwargs: object) -> None:
    """Celery installs its own root handlers (console or --logfile); give them the settings' formatter and
    filters, so worker logs read like the web's (JSON in production, with controller and key)."""
    from logging.config import DictConfigurator

    from django.conf import settings

    config: dict[str, Any] = settings.LOGGING
    console = config["handlers"]["console"]
    configurator = DictConfigurator(config)
    formatter = configurator.configure_formatter(dict(config["formatters"][console["formatter"]]))
    filters = [configurator.configure_filter(dict(config["filters"][name])) for name in console["filters"]]
    for handler in logger.handlers:
        handler.setFormatter(formatter)
        for log_filter in filters:
            handler.addFilter(log_filter)
