"""Case-insensitive prefix search on the sweep name (the dashboard's "Name starts with" and the admin's
`^name`: UPPER(name) LIKE 'X%'), served by an index as jobs' is (jobs 0001). Only PostgreSQL has pattern
operator classes; elsewhere (the SQLite dev database) the search scans.
"""

from django.db import migrations

INDEX = "hyperparam_sweep_name_search"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "hyperparam_sweep" (UPPER(name::text) text_pattern_ops)'
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{INDEX}"')


class Migration(migrations.Migration):
    dependencies = [("hyperparam", "0003_trial_metric_desc_index_on_postgresql")]

    operations = [migrations.RunPython(create_index, drop_index)]
