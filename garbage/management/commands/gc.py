"""`manage.py gc [--dry-run] [--namespace NS]`: one garbage collection from the shell, with a summary."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from garbage.collector import collect
from garbage.models import GCRun
from kube import validators


class Command(BaseCommand):
    help = "Delete old pods of finished workflows and what finished jobs left behind (see docs/gc.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Report what would go; delete nothing.")
        parser.add_argument(
            "--namespace",
            metavar="NS",
            type=validators.namespace_argument,
            help="Only look at this namespace.",
        )

    def handle(self, *args: Any, dry_run: bool, namespace: str | None, **options: Any) -> None:
        try:
            run = collect(dry_run=dry_run, namespace=namespace)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if run.status == GCRun.Status.SKIPPED:
            raise CommandError(f"{run.note} (run {run.pk})")
        verb = "would delete" if run.dry_run else "deleted"
        self.stdout.write(
            f"GC run {run.pk} {run.get_status_display().lower()}"
            f"{' (dry run)' if run.dry_run else ''}{f' in {run.namespace}' if run.namespace else ''}: "
            f"scanned {run.scanned}, {verb} {run.deleted}, kept {run.skipped}, errors {run.errors}."
        )
        for reason, count in _deletions_by_reason(run).items():
            self.stdout.write(f"  {verb} {count} ({reason})")
        for reason, count in run.skip_reasons.items():
            self.stdout.write(f"  kept {count} ({reason})")
        for failure in run.failures:
            self.stderr.write(f"  error: {failure['what']}: {failure['error']}")
        if run.note:
            self.stderr.write(run.note)
        if run.status == GCRun.Status.FAILED:
            raise CommandError(f"GC run {run.pk} failed.")


def _deletions_by_reason(run: GCRun) -> dict[str, int]:
    rows = run.deletions.values("reason").annotate(count=Count("id")).order_by("reason")
    return {row["reason"]: row["count"] for row in rows}
