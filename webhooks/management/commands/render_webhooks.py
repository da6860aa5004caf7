"""`manage.py render_webhooks`: write deploy/webhooks/*.yaml from webhooks/configurations.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webhooks import render


def default_directory() -> Path:
    return Path(settings.BASE_DIR) / "deploy" / "webhooks"


class Command(BaseCommand):
    help = "Render the webhook Service and configurations into deploy/webhooks/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", type=Path, default=None, help="Directory (default: deploy/webhooks/)."
        )
        parser.add_argument(
            "--check", action="store_true", help="Write nothing; fail when a file is missing or out of date."
        )

    def handle(self, *args: Any, output: Path | None, check: bool, **options: Any) -> None:
        directory = output or default_directory()
        if check:
            problems = render.stale(directory)
            if problems:
                raise CommandError(
                    "deploy files in {} are stale (run `manage.py render_webhooks`):\n  {}".format(
                        directory, "\n  ".join(problems)
                    )
                )
            self.stdout.write(f"{len(render.FILES)} files in {directory} are up to date.")
            return
        for name in render.write(directory):
            self.stdout.write(f"wrote {directory / name}")
