"""`manage.py install_runtimes`: apply the ready-made ClusterTrainingRuntimes (trainer/runtimes/) to the
configured cluster (idempotent; what `make run` and the chart's `trainer.installRuntimes` Job run)."""

from __future__ import annotations

from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import get_client
from kube.errors import ApiError
from trainer import catalog, install


class Command(BaseCommand):
    help = (
        "Create or update the ready-made ClusterTrainingRuntimes (torch-distributed, deepspeed-distributed, "
        "jax-distributed, xgboost-distributed) in the configured cluster; the TrainJob CRDs must exist "
        "(install_crds --trainer, or Kubeflow Trainer's)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Write nothing: print each runtime and what would happen."
        )
        parser.add_argument(
            "--adopt",
            action="store_true",
            help="Also update runtimes another installer made (without app.kubernetes.io/part-of=argoml).",
        )

    def handle(self, *args: Any, dry_run: bool, adopt: bool, **options: Any) -> None:
        manifests = catalog.ready_made_runtimes()
        if dry_run:
            self.stdout.write(
                yaml.safe_dump_all([install.labelled(m) for m in manifests], sort_keys=False), ending=""
            )
        try:
            outcomes = install.install(get_client(), manifests, dry_run=dry_run, adopt=adopt)
        except (ApiError, RuntimeError) as error:
            raise CommandError(f"installing the runtimes failed: {error}") from error
        for outcome in outcomes:
            self.stdout.write(("# " if dry_run else "") + str(outcome))
