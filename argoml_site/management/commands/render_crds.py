"""`manage.py render_crds`: write deploy/crds/*.yaml from the declarations each app keeps in its `crd.py`,
listed in argoml_site/crds.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES, TRAINER_RESOURCES
from kube.crds import render as crd_render

#: Kubeflow's group goes into its own folder: the chart installs deploy/crds/ always, these only with
#: `kubeflow.installCRDs`.
KUBEFLOW_FOLDER = "kubeflow"
#: Kubeflow Trainer v2's kinds, likewise installed only with `trainer.installCRDs`.
TRAINER_FOLDER = "trainer"


def default_directory() -> Path:
    return Path(settings.BASE_DIR) / "deploy" / "crds"


class Command(BaseCommand):
    help = (
        "Render our CustomResourceDefinitions into deploy/crds/ (one YAML file per kind), and the training "
        "kinds in Kubeflow's group (kubeflow.org/v1) into deploy/crds/kubeflow/, and Kubeflow Trainer's "
        "(trainer.kubeflow.org/v1alpha1) into deploy/crds/trainer/."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, default=None, help="Directory (default: deploy/crds/).")
        parser.add_argument(
            "--check", action="store_true", help="Write nothing; fail when a file is missing or out of date."
        )

    def handle(self, *args: Any, output: Path | None, check: bool, **options: Any) -> None:
        root = output or default_directory()
        folders = (
            (root, CUSTOM_RESOURCES),
            (root / KUBEFLOW_FOLDER, KUBEFLOW_RESOURCES),
            (root / TRAINER_FOLDER, TRAINER_RESOURCES),
        )
        for directory, resources in folders:
            if check:
                problems = crd_render.stale(directory, resources)
                if problems:
                    raise CommandError(
                        "CRDs in {} are stale (run `manage.py render_crds`):\n  {}".format(
                            directory, "\n  ".join(problems)
                        )
                    )
                self.stdout.write(f"{len(resources)} CRDs in {directory} are up to date.")
                continue
            changed = crd_render.write(directory, resources)
            for name in changed:
                self.stdout.write(f"wrote {directory / name}")
            if not changed:
                self.stdout.write(f"{len(resources)} CRDs in {directory} were already up to date.")
