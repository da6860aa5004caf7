"""Data migrations that put a periodic Celery task into django-celery-beat's schedule (editable in the admin).

A data migration rather than a post_migrate handler: it runs once, so a schedule changed or disabled in the
admin stays as the operator left it (a post_migrate handler would put it back on every migrate). Migrations
import this module: change it only in ways every migration already using it can live with.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import migrations
from django.utils import timezone


def schedule_periodic_task(task: str, *, every_seconds: int, description: str) -> migrations.RunPython:
    """Schedule `task` (a Celery task name, also the entry's name) every `every_seconds` on the default
    queue; reversing the migration removes the entry."""
    return migrations.RunPython(
        partial(_schedule, task=task, every_seconds=every_seconds, description=description),
        partial(_unschedule, task=task),
    )


def _schedule(apps: Any, schema_editor: Any, *, task: str, every_seconds: int, description: str) -> None:
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=every_seconds, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=task,
        defaults={
            "task": task,
            "interval": interval,
            "queue": "default",
            # A run nobody started within its own period is superseded by the next one.
            "expire_seconds": every_seconds,
            "description": description,
        },
    )
    _schedule_changed(apps)


def _unschedule(apps: Any, schema_editor: Any, *, task: str) -> None:
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=task).delete()
    _schedule_changed(apps)


def _schedule_changed(apps: Any) -> None:
    """Historical models skip django-celery-beat's signals: tell running beat schedulers ourselves."""
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    PeriodicTasks.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})
