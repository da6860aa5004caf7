"""What the benchmarks that write to PostgreSQL share (imported once Django is set up)."""

from __future__ import annotations


def ensure_database() -> None:
    """Create the benchmark's PostgreSQL database (Django's default connection) when missing, and migrate
    it."""
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor == "postgresql":
        import psycopg

        db = connection.settings_dict
        params = {"host": db["HOST"] or "127.0.0.1", "port": db["PORT"] or 5432, "user": db["USER"]}
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
                admin.execute(f'CREATE DATABASE "{db["NAME"]}"')
    call_command("migrate", verbosity=0)
