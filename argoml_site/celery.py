"""The Celery app: queues `reconcile` and `default`, Redis broker and results, beat from the database."""

from __future__ import annotations

import os

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "argoml_site.settings")

app = Celery("argoml")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = [Queue(name, Exchange(name), routing_key=name) for name in ("reconcile", "default")]
app.autodiscover_tasks()
