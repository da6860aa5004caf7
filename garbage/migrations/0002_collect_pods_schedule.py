"""Schedule garbage.collect_pods every 10 minutes in django-celery-beat (editable in the admin).

A data migration rather than a post_migrate handler: it runs once, so a schedule changed or disabled in the
admin stays as the operator left it.
"""

from django.db import migrations
from django.utils import timezone

TASK = "garbage.collect_pods"
EVERY_SECONDS = 600


def _schedule_changed(apps):
    """Historical models skip django-celery-beat's signals: tell running beat schedulers ourselves."""
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    PeriodicTasks.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


def schedule_collection(apps, schema_editor):
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    interval, _ = IntervalSchedule.objects.get_or_create(every=EVERY_SECONDS, period="seconds")
    PeriodicTask.objects.get_or_create(
        name=TASK,
        defaults={
            "task": TASK,
            "interval": interval,
            "queue": "default",
            # A collection nobody started within its own period is superseded by the next one.
            "expire_seconds": EVERY_SECONDS,
            "description": "Delete old pods of finished workflows and what finished jobs left (docs/gc.md).",
        },
    )
    _schedule_changed(apps)


def unschedule_collection(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=TASK).delete()
    _schedule_changed(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("garbage", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule_collection, unschedule_collection)]
