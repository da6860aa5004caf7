"""The periodic collection, thin: scheduled by django-celery-beat (every 10 minutes; edit it in the admin)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from .collector import collect


@shared_task(name="garbage.collect_pods", ignore_result=True)
def collect_pods(dry_run: bool = False, namespace: str | None = None) -> dict[str, Any]:
    """Run one garbage collection (or return at once if another holds the lock); its GCRun's summary."""
    run = collect(dry_run=dry_run, namespace=namespace)
    return {"run": run.pk, "status": run.status, "deleted": run.deleted, "errors": run.errors}
