"""Schedule tensorboard.cull_idle every 5 minutes in django-celery-beat (editable in the admin)."""

from django.db import migrations

from web.schedules import schedule_periodic_task


class Migration(migrations.Migration):
    dependencies = [
        ("tensorboard", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        schedule_periodic_task(
            "tensorboard.cull_idle",
            every_seconds=300,
            description="Delete TensorBoards idle longer than their idleTimeout (default 2 hours).",
        )
    ]
