"""`manage.py install_crds`: create or update our CRDs in the configured cluster (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import get_client
from kube.crds import CUSTOM_RESOURCES
from kube.crds.install import install, wait_established
from kube.errors import ApiError


class Command(BaseCommand):
    help = "Create or update the argoml.io CustomResourceDefinitions in the configured cluster."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="Then wait up to SECONDS until the apiserver serves every kind (condition Established).",
        )

    def handle(self, *args: Any, wait: float, **options: Any) -> None:
        try:
            client = get_client()
            results = install(client, CUSTOM_RESOURCES)
        except (ApiError, RuntimeError) as error:
            raise CommandError(f"installing CRDs failed: {error}") from error
        for name, outcome in results:
            self.stdout.write(f"{name} {outcome}")
        if wait > 0:
            waiting = wait_established(client, [name for name, _ in results], wait)
            if waiting:
                raise CommandError(f"not established after {wait:g}s: {', '.join(waiting)}")
            self.stdout.write("all established")
