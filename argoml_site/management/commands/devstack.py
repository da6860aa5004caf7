"""`manage.py devstack`: the whole local stack in one terminal (what `make run` calls)."""

from __future__ import annotations

import subprocess

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from argoml_site.devstack import StackError, run


class Command(BaseCommand):
    help = (
        "Start embedded Redis, the Celery worker with beat, the web server and the webhook listener; "
        "Ctrl-C stops them all."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--webhook-port", type=int, default=8443, help="The webhook listener's HTTPS port."
        )
        parser.add_argument(
            "--tensorboard-port",
            type=int,
            default=None,
            help="The TensorBoard origin's port (the proxy to TensorBoards; default: --port + 1).",
        )

    def handle(self, *args, port: int, webhook_port: int, tensorboard_port: int | None, **options):
        try:
            exit_code = run(
                settings.BASE_DIR,
                settings.DEV_DIR,
                port=port,
                webhook_port=webhook_port,
                tensorboard_port=tensorboard_port,
            )
        except (StackError, subprocess.CalledProcessError) as exc:
            raise CommandError(str(exc)) from exc
        if exit_code:
            raise CommandError("A process of the stack stopped unexpectedly; see its output above.")
