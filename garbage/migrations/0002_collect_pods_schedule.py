"""Schedule garbage.collect_pods every 10 minutes in django-celery-beat (editable in the admin)."""

from django.db import migrations

from web.schedules import schedule_periodic_task


class Migration(migrations.Migration):
    dependencies = [
        ("garbage", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        schedule_periodic_task(
            "garbage.collect_pods",
            every_seconds=600,
            description="Delete old pods of finished workflows and what finished jobs left (docs/gc.md).",
        )
    ]
