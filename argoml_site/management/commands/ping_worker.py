"""`manage.py ping_worker`: send a task through the broker and wait for a worker to answer it."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from argoml_site.tasks import ping


class Command(BaseCommand):
    help = "Check end to end that a Celery worker consumes the default queue and returns results."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the answer")
        parser.add_argument("--queue", default="default")

    def handle(self, *args, timeout: float, queue: str, **options):
        result = ping.apply_async(queue=queue)
        try:
            answer = result.get(timeout=timeout)
        except Exception as exc:
            raise CommandError(
                f"No worker answered a ping task on queue {queue!r} within {timeout:g}s: {exc}"
            ) from exc
        self.stdout.write(f"Worker answered a ping task from {answer['pong']}")
