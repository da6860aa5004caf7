"""`manage.py install_crds`: create or update our CRDs in the configured cluster (idempotent)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES, TRAINER_RESOURCES
from kube.client import get_client
from kube.crds.install import install, wait_established
from kube.errors import ApiError


class Command(BaseCommand):
    help = (
        "Create or update the argoml.io CustomResourceDefinitions in the configured cluster (with "
        "--kubeflow, Kubeflow's kubeflow.org/v1 training kinds too; with --trainer, Kubeflow Trainer v2's "
        "TrainJob and runtimes)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="Then wait up to SECONDS until the apiserver serves every kind (condition Established).",
        )
        parser.add_argument(
            "--kubeflow",
            action="store_true",
            help="Also serve TFJob, MXJob and PyTorchJob as kubeflow.org/v1 (set JOBS_KUBEFLOW_V1 too).",
        )
        parser.add_argument(
            "--trainer",
            action="store_true",
            help="Also install Kubeflow Trainer v2's TrainJob, TrainingRuntime and ClusterTrainingRuntime.",
        )

    def handle(self, *args: Any, wait: float, kubeflow: bool, trainer: bool, **options: Any) -> None:
        resources = (
            CUSTOM_RESOURCES
            + (KUBEFLOW_RESOURCES if kubeflow else ())
            + (TRAINER_RESOURCES if trainer else ())
        )
        try:
            client = get_client()
            results = install(client, resources)
        except (ApiError, RuntimeError) as error:
            raise CommandError(f"installing CRDs failed: {error}") from error
        for name, outcome in results:
            self.stdout.write(f"{name} {outcome}")
        if wait > 0:
            waiting = wait_established(client, [name for name, _ in results], wait)
            if waiting:
                raise CommandError(f"not established after {wait:g}s: {', '.join(waiting)}")
            self.stdout.write("all established")
