"""Schedule tensorboard.cull_idle every 5 minutes in django-celery-beat.

A data migration rather than a post_migrate handler: it runs once, so a schedule changed or disabled in the
admin stays as the operator left it.
"""

from django.db import migrations
from django.utils import timezone

TASK = "tensorboard.cull_idle"
EVERY_SECONDS = 300


def _schedule_changed(apps):
    """Historical models skip django-celery-beat's signals: tell running beat schedulers ourselves."""
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    PeriodicTasks.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


def schedule_culling(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=EVERY_SECONDS, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=TASK,
        defaults={
            "task": TASK,
            "interval": interval,
            "queue": "default",
            # A culling nobody ran within its own period is superseded by the next one.
            "expire_seconds": EVERY_SECONDS,
            "description": "Delete TensorBoards idle longer than their idleTimeout (default 2 hours).",
        },
    )
    _schedule_changed(apps)


def unschedule_culling(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=TASK).delete()
    _schedule_changed(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("tensorboard", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule_culling, unschedule_culling)]
