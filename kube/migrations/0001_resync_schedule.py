"""Schedule kube.resync_all every 10 minutes in django-celery-beat (editable in the admin)."""

from django.db import migrations

from web.schedules import schedule_periodic_task


class Migration(migrations.Migration):
    dependencies = [("django_celery_beat", "0019_alter_periodictasks_options")]

    operations = [
        schedule_periodic_task(
            "kube.resync_all",
            every_seconds=600,
            description="Enqueue every key of every controller so that missed watch events heal.",
        )
    ]
