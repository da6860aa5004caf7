"""Best-first trials of a maximizing sweep read `metric DESC NULLS LAST`; index that on PostgreSQL.

Not a Meta index: SQLite (the embedded default) cannot declare NULLS LAST in an index, and small dev
databases do not need it.
"""

from django.db import migrations

INDEX = "hyperparam_trial_metric_desc"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "hyperparam_trial" '
            '("sweep_id", "metric" DESC NULLS LAST, "index")'
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{INDEX}"')


class Migration(migrations.Migration):
    dependencies = [("hyperparam", "0002_trial_sweep_index_from_unique")]

    operations = [migrations.RunPython(create_index, drop_index)]
