"""`manage.py install_runtimes`: apply the ready-made ClusterTrainingRuntimes (trainer/runtimes/) to the
configured cluster (idempotent; what `make run` and the chart's `trainer.installRuntimes` Job run), and
with `--public-configmap` Trainer's public ConfigMap (`make run`; the chart renders it with
trainer.installCRDs)."""

from __future__ import annotations

import os
from typing import Any

import yaml
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import get_client
from kube.errors import ApiError
from trainer import constants as c
from trainer import public
from trainer.runtimes import catalog, install


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
        parser.add_argument(
            "--public-configmap",
            action="store_true",
            help=f"Also install Trainer's public ConfigMap {c.PUBLIC_CONFIGMAP} (the version Kubeflow's SDK "
            "checks) with the Role letting every authenticated user read it.",
        )
        parser.add_argument(
            "--system-namespace",
            default=os.environ.get("KUBEFLOW_SYSTEM_NAMESPACE") or c.SYSTEM_NAMESPACE,
            help="Where the public ConfigMap goes (default: $KUBEFLOW_SYSTEM_NAMESPACE, as the SDK reads it, "
            f"or {c.SYSTEM_NAMESPACE}).",
        )

    def handle(
        self,
        *args: Any,
        dry_run: bool,
        adopt: bool,
        public_configmap: bool,
        system_namespace: str,
        **options: Any,
    ) -> None:
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
        if public_configmap and not dry_run:
            try:
                done = public.install(get_client(), system_namespace)
            except (ApiError, RuntimeError, ValueError) as error:
                raise CommandError(f"installing {c.PUBLIC_CONFIGMAP} failed: {error}") from error
            for line in done:
                self.stdout.write(line)
