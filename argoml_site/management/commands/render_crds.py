"""`manage.py render_crds`: write deploy/crds/*.yaml from the declarations each app keeps in its `crd.py`,
listed in argoml_site/crds.py."""

from __future__ import annotations

from pathlib import Path

from argoml_site.crds import CUSTOM_RESOURCES, KUBEFLOW_RESOURCES, TRAINER_RESOURCES
from kube.crds import render as crd_render
from web import deployfiles

#: Kubeflow's group goes into its own folder: the chart installs deploy/crds/ always, these only with
#: `kubeflow.installCRDs`.
KUBEFLOW_FOLDER = "kubeflow"
#: Kubeflow Trainer v2's kinds, likewise installed only with `trainer.installCRDs`.
TRAINER_FOLDER = "trainer"


class Command(deployfiles.RenderCommand):
    help = (
        "Render our CustomResourceDefinitions into deploy/crds/ (one YAML file per kind), and the training "
        "kinds in Kubeflow's group (kubeflow.org/v1) into deploy/crds/kubeflow/, and Kubeflow Trainer's "
        "(trainer.kubeflow.org/v1alpha1) into deploy/crds/trainer/."
    )
    folder = "crds"

    def render(self, root: Path, *, check: bool) -> None:
        folders = (
            (root, CUSTOM_RESOURCES),
            (root / KUBEFLOW_FOLDER, KUBEFLOW_RESOURCES),
            (root / TRAINER_FOLDER, TRAINER_RESOURCES),
        )
        for directory, resources in folders:
            if check:
                self.check_fresh(
                    crd_render.stale(directory, resources),
                    stale=f"CRDs in {directory} are stale (run `manage.py render_crds`)",
                    fresh=f"{len(resources)} CRDs in {directory} are up to date.",
                )
                continue
            changed = crd_render.write(directory, resources)
            self.report_written(directory, changed)
            if not changed:
                self.stdout.write(f"{len(resources)} CRDs in {directory} were already up to date.")
